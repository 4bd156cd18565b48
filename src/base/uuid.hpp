#pragma once
// Random (version 4) UUIDs in the canonical lowercase 8-4-4-4-12 form, as upstream uses for
// connection ids and schedule event ids.

#include <string>

namespace rivetkit {

std::string random_uuid_v4();

}  // namespace rivetkit
