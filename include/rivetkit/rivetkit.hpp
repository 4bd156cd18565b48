#pragma once
// The typed C++ actor API: everything an actor author includes.

#include "rivetkit/actor.hpp"
#include "rivetkit/context.hpp"
#include "rivetkit/error.hpp"
#include "rivetkit/options.hpp"
#include "rivetkit/raw.hpp"
#include "rivetkit/value.hpp"
