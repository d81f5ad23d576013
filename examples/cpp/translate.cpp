// translate MODEL [BEAM]: translates the lines of standard input with a model trained by
// `transformer train` (its vocabulary beside it), printing each best translation and its score.
#include <iostream>
#include <string>
#include <vector>

#include <transformer/translator.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: translate MODEL [BEAM] < input\n";
    return 2;
  }
  try {
    const transformer::Translator translator(argv[1]);
    transformer::TranslateOptions options;
    options.search.beam_size = argc > 2 ? std::stoi(argv[2]) : 4;
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    for (const transformer::Translation& t : translator.translate(lines, options)) {
      if (t.hypotheses.empty()) {
        std::cout << "\n";  // an empty line has no translation
        continue;
      }
      std::cout << t.best().text << "\t" << t.best().normalized << "\n";
    }
  } catch (const transformer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
