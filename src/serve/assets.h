#pragma once
// The files the server serves from its own binary (no files beside it, nothing fetched at run time):
// src/serve/assets/index.html (the web page at /) and src/serve/assets/openapi.json, embedded at build
// time by cmake/embed_asset.cmake.
#include <string_view>

namespace tfm::serve {

extern const std::string_view kIndexHtml;
extern const std::string_view kOpenApiJson;

}  // namespace tfm::serve
