#pragma once
// Checking error messages: what a user gets wrong must come back as a tfm::Error that names the
// problem and the values.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/error.h"

namespace tfm::testing {

// The message of the tfm::Error that f() throws, or "" if it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects f() to throw a tfm::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F f, std::initializer_list<const char*> parts) {
  const std::string what = error_of(f);
  if (what.empty()) {
    ADD_FAILURE() << "no tfm::Error thrown";
    return;
  }
  for (const char* p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
}

}  // namespace tfm::testing
