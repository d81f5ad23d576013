// nbest MODEL SENTENCE: the 2 best translations of a sentence with their scores and where the first
// output token looks in the source (the last layer's attention, averaged over heads), then the
// teacher-forced score of the best one.
#include <iostream>

#include <transformer/translator.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: nbest MODEL SENTENCE\n";
    return 2;
  }
  try {
    transformer::TranslatorOptions load;
    load.weights = transformer::TranslatorOptions::Weights::kPlain;  // scoring needs the weights as trained
    load.threads = 1;                                               // this translator's calls; 0: all cores
    const transformer::Translator t(argv[1], load);

    transformer::TranslateOptions o;
    o.search.beam_size = 4;
    o.search.n_best = 2;
    o.search.record_attention = true;
    const transformer::Translation r = t.translate({argv[2]}, o).at(0);
    for (const transformer::Hypothesis& h : r.hypotheses) {
      const transformer::Attention& a = h.attention;  // [layers][heads][target][source]
      int64_t focus = 0;
      double best = -1;
      for (int64_t s = 0; s < a.source_length; ++s) {
        double w = 0;
        for (int64_t head = 0; head < a.heads; ++head) w += a.at(a.layers - 1, head, 0, s) / a.heads;
        if (w > best) best = w, focus = s;
      }
      std::cout << h.text << "\t" << h.score << "\t" << h.normalized << "\tsource token " << focus << "\n";
    }
    const transformer::Score s = t.score({argv[2]}, {r.best().text}).at(0);
    std::cout << "teacher-forced\t" << s.total << "\t" << s.per_token << "\t" << s.tokens << " tokens\n";
  } catch (const transformer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
