#pragma once
// The data a training reads before its first step: the training and validation pairs, the
// vocabulary (given, the run folder's, or trained on the training text), and the pairs encoded.
#include <functional>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/vocab.h"
#include "dist/communicator.h"
#include "train/options.h"
#include "train/validation.h"

namespace tfm {

struct TrainingCorpus {
  Vocab vocab;                    // rank 0's, sent to every rank
  std::vector<Example> examples;  // the training pairs within max_tokens
  ValidData valid;                // rank 0's
  bool validates = false;         // whether rank 0 has a validation set, known to every rank
};

// That the files exist before the minutes of reading them: every rank's training files, and rank 0's
// (`root`) validation files and --vocab.
void check_input_files(const TrainOptions& o, bool root);

// Every rank reads the training files (and checks that their text is rank 0's); the validation
// files and the vocabulary are rank 0's. `message` receives progress lines (rank 0's are shown).
TrainingCorpus prepare_corpus(const TrainOptions& o, dist::Communicator& comm,
                              const std::function<void(const std::string&)>& message);

}  // namespace tfm
