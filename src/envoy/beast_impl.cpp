// The single translation unit that compiles Boost.Beast's implementation
// (BOOST_BEAST_SEPARATE_COMPILATION, set PUBLIC on rivetkit_beast).
#include <boost/beast/src.hpp>
