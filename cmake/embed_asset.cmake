# cmake -DINPUT=file -DOUTPUT=file.cc -DNAME=kName -P embed_asset.cmake
# Writes a C++ source defining tfm::serve::NAME, a std::string_view of INPUT's bytes (as a raw string
# literal, in pieces of at most 16 KiB since some compilers limit a literal's length).
file(READ "${INPUT}" content)
string(FIND "${content}" ")tfm_asset\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter )tfm_asset\"")
endif()
string(LENGTH "${content}" length)
set(pieces "")
set(offset 0)
while(offset LESS length)
  string(SUBSTRING "${content}" ${offset} 16384 piece)
  string(APPEND pieces "R\"tfm_asset(${piece})tfm_asset\"\n")
  math(EXPR offset "${offset} + 16384")
endwhile()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by cmake/embed_asset.cmake; do not edit.
#include \"serve/assets.h\"
namespace tfm::serve {
namespace {
const char ${NAME}Data[] =
${pieces};
}  // namespace
const std::string_view ${NAME}(${NAME}Data, sizeof ${NAME}Data - 1);
}  // namespace tfm::serve
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
