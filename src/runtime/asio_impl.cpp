// The single translation unit that compiles Boost.Asio's implementation (BOOST_ASIO_SEPARATE_COMPILATION).
#include <boost/asio/impl/src.hpp>
