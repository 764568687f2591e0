#include "report/linear_json.hpp"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;
using Members = Json::object_t::Container;  // ordered_map is a vector of (key, value)

// Objects up to this many members are searched; a larger one gets an index. Verdict objects
// have a handful of keys, so most never build one.
constexpr std::size_t kIndexFrom = 16;

// The SAX handler of nlohmann's sax_parse: builds the tree as its DOM parser does, with an
// explicit stack (the nesting was bounded before; nothing here recurses).
class LinearBuilder {
 public:
  explicit LinearBuilder(Json& root) : root_(root) {}

  bool null() { return place(Json(nullptr)) != nullptr; }
  bool boolean(bool value) { return place(Json(value)) != nullptr; }
  bool number_integer(Json::number_integer_t value) { return place(Json(value)) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t value) { return place(Json(value)) != nullptr; }
  bool number_float(Json::number_float_t value, const Json::string_t& /*text*/) {
    return place(Json(value)) != nullptr;
  }
  bool string(Json::string_t& value) { return place(Json(std::move(value))) != nullptr; }
  bool binary(Json::binary_t& value) { return place(Json::binary(std::move(value))) != nullptr; }

  bool start_object(std::size_t /*elements*/) {
    open_.push_back({place(Json::object()), {}});
    return true;
  }
  bool key(Json::string_t& name) {
    Open& top = open_.back();
    Members& members = top.value->get_ref<Json::object_t&>();
    std::size_t at = members.size();
    if (members.size() < kIndexFrom) {
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (members[i].first == name) at = i;
      }
    } else {
      if (top.index.empty()) {
        for (std::size_t i = 0; i < members.size(); ++i) top.index.emplace(members[i].first, i);
      }
      at = top.index.emplace(name, members.size()).first->second;
    }
    // A key seen before keeps its place and takes the new value, as ordered_json::parse does.
    if (at == members.size()) members.emplace_back(std::move(name), nullptr);
    member_ = &members[at].second;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    open_.push_back({place(Json::array()), {}});
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }

  // nlohmann passes the concrete exception (parse_error, out_of_range): thrown as it is, so
  // the caller tells them apart as it would after ordered_json::parse.
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    throw e;
  }

 private:
  struct Open {
    Json* value;  // an object or an array, inside its parent (stable until it is closed)
    std::unordered_map<std::string, std::size_t> index;  // key -> member, for large objects
  };

  // Puts a value where the parser is: the root, the next element of the open array, or the
  // member whose key came last. Returns where it is.
  Json* place(Json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *open_.back().value;
    if (parent.is_array()) {
      Json::array_t& elements = parent.get_ref<Json::array_t&>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    *member_ = std::move(value);
    return member_;
  }

  Json& root_;
  std::vector<Open> open_;
  Json* member_ = nullptr;
};

}  // namespace

nlohmann::ordered_json parse_ordered_json(std::string_view text) {
  Json root;
  LinearBuilder builder(root);
  Json::sax_parse(text, &builder);
  return root;
}

}  // namespace preflight
