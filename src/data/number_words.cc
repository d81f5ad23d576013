#include "data/number_words.h"

#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "core/rng.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {

void check_range(int64_t n, const char* what) {
  TFM_CHECK(n >= 0 && n <= kMaxNumberWord, what, ": ", n, " is outside the supported range [0, ", kMaxNumberWord, "]");
}

// ---- English ------------------------------------------------------------------------------------

constexpr std::array<const char*, 20> kEnglishSmall = {
    "zero", "one",    "two",    "three",    "four",     "five",    "six",     "seven",     "eight",    "nine",
    "ten",  "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::array<const char*, 10> kEnglishTens = {"",      "",      "twenty",  "thirty", "forty",
                                                      "fifty", "sixty", "seventy", "eighty", "ninety"};

// 1..999 (never zero: a zero group is left out, "two thousand", not "two thousand zero").
std::string english_group(int64_t n) {
  std::string out;
  const int64_t hundreds = n / 100, rest = n % 100;
  if (hundreds > 0) out = std::string(kEnglishSmall[hundreds]) + " hundred";
  if (rest == 0) return out;
  if (!out.empty()) out += ' ';
  if (rest < 20) return out + kEnglishSmall[rest];
  out += kEnglishTens[rest / 10];
  if (rest % 10 != 0) out += std::string("-") + kEnglishSmall[rest % 10];
  return out;
}

// ---- German -------------------------------------------------------------------------------------

// Units as they stand before "und", "hundert" and "tausend": 1 is "ein" there ("einundzwanzig",
// "einhundert", "eintausend"); "eins" is only the number's last word. 6 and 7 keep their full
// form there ("sechsundzwanzig", "siebenhundert", "siebentausend"); only the teens and tens
// shorten them ("sechzehn", "siebzig").
constexpr std::array<const char*, 10> kGermanUnits = {"",     "ein",   "zwei",  "drei",   "vier",
                                                      "fünf", "sechs", "sieben", "acht", "neun"};
constexpr std::array<const char*, 10> kGermanTeens = {"zehn",     "elf",      "zwölf",    "dreizehn", "vierzehn",
                                                      "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"};
// 30 is "dreißig" (-ßig, not -zig), 60 and 70 drop "-s" and "-en".
constexpr std::array<const char*, 10> kGermanTens = {"",        "",        "zwanzig", "dreißig",  "vierzig",
                                                     "fünfzig", "sechzig", "siebzig", "achtzig",  "neunzig"};

// 1..999. `last` says whether nothing follows this group: only then is a final 1 "eins"
// ("einhunderteins"); before "tausend" it is "ein" ("einhunderteintausend" = 101000).
std::string german_group(int64_t n, bool last) {
  std::string out;
  const int64_t hundreds = n / 100, rest = n % 100;
  if (hundreds > 0) out = std::string(kGermanUnits[hundreds]) + "hundert";
  if (rest == 0) return out;
  if (rest == 1) return out + (last ? "eins" : "ein");
  if (rest < 10) return out + kGermanUnits[rest];
  if (rest < 20) return out + kGermanTeens[rest - 10];
  if (rest % 10 != 0) out += std::string(kGermanUnits[rest % 10]) + "und";  // units before tens
  return out + kGermanTens[rest / 10];
}

// ---- Random numbers -----------------------------------------------------------------------------

// A sequence of 32-bit words from Philox4x32-10 with the counter layout of RngStream::uniform4
// (block in words 0-1, stream in words 2-3), but as integers: the bounded draws below need exact
// uniformity over up to 900,000 values, more than a float's 24 bits resolve evenly.
class PhiloxWords {
 public:
  PhiloxWords(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

  uint32_t next() {
    if (used_ == 4) {
      words_ = philox4x32({static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                           static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                          {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
      ++block_;
      used_ = 0;
    }
    return words_[used_++];
  }

  // Uniform over [0, n), n ≥ 1: words in the last, incomplete run of n values are redrawn, so
  // that every value has the same number of words mapping to it (plain `% n` would favour small ones).
  uint32_t below(uint32_t n) {
    const uint64_t span = uint64_t{1} << 32;
    const uint64_t accept = span - span % n;
    for (;;) {
      const uint32_t w = next();
      if (w < accept) return w % n;
    }
  }

 private:
  uint64_t seed_, stream_;
  uint64_t block_ = 0;
  std::array<uint32_t, 4> words_{};
  int used_ = 4;
};

// Streams of the generator, one per purpose, so a change to one draw leaves the other's words alone.
constexpr uint64_t kStreamDraw = 0, kStreamShuffle = 1;

void write_lines(const std::string& path, const std::vector<int64_t>& numbers, std::string (*words)(int64_t)) {
  write_file_atomic(path, [&](std::ostream& out) {
    for (const int64_t n : numbers) out << words(n) << '\n';
  });
}

}  // namespace

std::string english_number(int64_t n) {
  check_range(n, "english_number");
  if (n == 0) return "zero";
  const int64_t thousands = n / 1000, rest = n % 1000;
  std::string out;
  if (thousands > 0) out = english_group(thousands) + " thousand";
  if (rest > 0) {
    if (!out.empty()) out += ' ';
    out += english_group(rest);
  }
  return out;
}

std::string german_number(int64_t n) {
  check_range(n, "german_number");
  if (n == 0) return "null";
  const int64_t thousands = n / 1000, rest = n % 1000;
  std::string out;
  if (thousands > 0) out = german_group(thousands, /*last=*/false) + "tausend";
  if (rest > 0) out += german_group(rest, /*last=*/true);
  return out;
}

NumberDataset make_number_dataset(uint64_t seed, int64_t train, int64_t valid, int64_t test) {
  TFM_CHECK(train >= 0 && valid >= 0 && test >= 0, "number dataset: split sizes must not be negative, got train ",
            train, ", valid ", valid, ", test ", test);
  constexpr int64_t kAll = kMaxNumberWord + 1;
  // Each size is bounded before they are added, so the sum cannot overflow.
  const bool fits = train <= kAll && valid <= kAll && test <= kAll && train + valid + test <= kAll;
  TFM_CHECK(fits, "number dataset: train ", train, " + valid ", valid, " + test ", test,
            " distinct numbers asked for, but only ", kAll, " exist (0 to ", kMaxNumberWord, ")");
  const int64_t total = train + valid + test;

  // Digit classes: d digits cover [lo, lo + size): 1 → [0, 10), 2 → [10, 100), ..., 6 → [100000, 1000000).
  struct DigitClass {
    int64_t lo, size, taken = 0;
  };
  std::vector<DigitClass> open;  // classes that still have numbers left
  for (int64_t lo = 0, hi = 10; hi <= kAll; lo = hi, hi *= 10) open.push_back({lo, hi - lo});

  PhiloxWords draw(seed, kStreamDraw);
  std::vector<bool> taken(kAll, false);
  std::vector<int64_t> numbers;
  numbers.reserve(total);
  while (static_cast<int64_t>(numbers.size()) < total) {
    const uint32_t c = draw.below(static_cast<uint32_t>(open.size()));
    DigitClass& cls = open[c];
    // Redraw within the class until a new number comes up; the class always has one left, and
    // classes stay small enough (at most 900,000 values) that this stays cheap.
    int64_t n;
    do n = cls.lo + draw.below(static_cast<uint32_t>(cls.size));
    while (taken[n]);
    taken[n] = true;
    numbers.push_back(n);
    if (++cls.taken == cls.size) open.erase(open.begin() + c);
  }

  // Fisher-Yates: the draw order front-loads the small classes (they run out first), so cutting
  // it directly would put every one- and two-digit number into the first split.
  PhiloxWords shuffle(seed, kStreamShuffle);
  for (int64_t i = total - 1; i > 0; --i)
    std::swap(numbers[i], numbers[shuffle.below(static_cast<uint32_t>(i + 1))]);

  NumberDataset out;
  out.train.assign(numbers.begin(), numbers.begin() + train);
  out.valid.assign(numbers.begin() + train, numbers.begin() + train + valid);
  out.test.assign(numbers.begin() + train + valid, numbers.end());
  return out;
}

NumberDataset write_number_dataset(const std::string& dir, uint64_t seed, int64_t train, int64_t valid,
                                   int64_t test) {
  NumberDataset data = make_number_dataset(seed, train, valid, test);
  TFM_CHECK(!dir.empty(), "the output folder's name is empty: give a path");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  TFM_CHECK(!ec, "cannot create the folder '", dir, "': ", ec.message());
  const std::filesystem::path base(dir);
  const std::pair<const char*, const std::vector<int64_t>*> splits[] = {
      {"train", &data.train}, {"valid", &data.valid}, {"test", &data.test}};
  for (const auto& [name, numbers] : splits) {
    write_lines((base / (std::string(name) + ".en")).string(), *numbers, english_number);
    write_lines((base / (std::string(name) + ".de")).string(), *numbers, german_number);
  }
  return data;
}

}  // namespace tfm
