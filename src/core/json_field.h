#pragma once
// Reading one JSON value into a typed option field, strictly: nlohmann::json's get_to would turn
// 5.7 into 5 for an integer, true into 1, and accept 3e9 for an int32. Configuration files are
// user input, so a value that does not fit its field's type is an error that names both.
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_text.h"

namespace tfm {

// Whether T is a std::vector: a list field, each item read as its type.
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// The message reads "WHAT 'KEY' must be ..., got VALUE"; `what` says what kind of field it is.
template <class T>
void read_json_field(const nlohmann::json& value, T& out, std::string_view what, std::string_view key) {
  auto wrong = [&](const char* expected) {
    return Error(cat(what, " '", key, "' must be ", expected, ", got ", json_quote(value)));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) throw wrong("true or false");
    out = value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!value.is_number_integer()) throw wrong("an integer");
    if (value.is_number_unsigned()) {
      const auto u = value.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw wrong("an integer in range");
      out = static_cast<T>(u);
    } else {
      const auto i = value.get<int64_t>();
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        throw wrong("an integer in range");
      out = static_cast<T>(i);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) throw wrong("a number");
    out = value.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) throw wrong("a string");
    out = value.get<std::string>();
  } else if constexpr (IsVector<T>::value) {
    if (!value.is_array()) throw wrong("a list");
    T items;
    for (size_t i = 0; i < value.size(); ++i) {
      typename T::value_type item{};
      read_json_field(value[i], item, what, cat(key, "[", i, "]"));
      items.push_back(std::move(item));
    }
    out = std::move(items);
  } else {
    static_assert(sizeof(T) == 0, "read_json_field: unsupported field type");
  }
}

}  // namespace tfm
