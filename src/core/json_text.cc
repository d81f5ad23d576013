// Parsing JSON with a nesting limit (nlohmann's parser callback sees every container as it opens)
// and quoting a value's prefix for messages.
#include "core/json_text.h"

#include "core/error.h"

namespace tfm {

namespace {
using json = nlohmann::json;

// Parses with the nesting checked at each array or object that opens; `depth` counts the
// containers around it, so the outermost is at 0.
json parse_checked(std::string_view text, std::string_view source, bool allow_exceptions) {
  const auto check_depth = [source](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::array_start || event == json::parse_event_t::object_start) &&
        depth >= kMaxJsonDepth)
      throw Error(cat(source, ": JSON nested deeper than ", kMaxJsonDepth, " levels, the limit for any JSON read"));
    return true;
  };
  return json::parse(text.begin(), text.end(), check_depth, allow_exceptions);
}

// Appends value's compact JSON to out, stopping once out holds more than `limit` characters: each
// level opened appends a character first, so the recursion is at most `limit` deep.
void quote_into(const json& value, std::string& out, size_t limit) {
  if (out.size() > limit) return;
  const auto dump = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    out += dump(json(s.substr(0, limit + 1)));
  } else if (value.is_object()) {
    out += '{';
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (it != value.begin()) out += ',';
      out += dump(json(it.key().substr(0, limit + 1))) + ':';
      quote_into(it.value(), out, limit);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (it != value.begin()) out += ',';
      quote_into(*it, out, limit);
    }
    out += ']';
  } else {
    out += dump(value);  // a number, true, false, null: short
  }
}
}  // namespace

json parse_json(std::string_view text, std::string_view source) {
  try {
    return parse_checked(text, source, true);
  } catch (const json::exception& e) {  // syntax, invalid UTF-8, a number out of range (1e400)
    throw Error(cat(source, ": not valid JSON: ", e.what()));
  }
}

json parse_json_or_discarded(std::string_view text, std::string_view source) {
  return parse_checked(text, source, false);
}

std::string json_quote(const json& value, size_t limit) {
  std::string out;
  quote_into(value, out, limit);
  if (out.size() <= limit) return out;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return out.substr(0, cut) + "...";
}

}  // namespace tfm
