#pragma once
// JSON text parsed into an ordered_json in time linear in its size. nlohmann's own parse inserts
// every member of an object with a search of the members before it (ordered_map keeps them in a
// vector, in document order), so one object of 200000 keys took 30 s and one of a 64 MiB file
// would take hours. Here an object being read keeps a hash index of its keys once it has more
// than a few. The result, duplicate keys included (the first position, the last value), is the
// one nlohmann::ordered_json::parse gives.
#include <string_view>

#include <nlohmann/json.hpp>

namespace preflight {

// Throws what ordered_json::parse throws: parse_error for text that is not JSON, out_of_range
// for a number beyond a double. Does not bound nesting: check json_nesting_depth first.
nlohmann::ordered_json parse_ordered_json(std::string_view text);

}  // namespace preflight
