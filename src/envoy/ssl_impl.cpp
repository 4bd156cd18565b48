// The single translation unit that compiles Boost.Asio's SSL implementation (separate
// compilation, as asio_impl.cpp does for the rest of Asio).
#include <boost/asio/ssl/impl/src.hpp>
