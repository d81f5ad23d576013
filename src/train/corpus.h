#pragma once
// The data a training reads before its first step: the training and validation pairs (a language
// model's sentences), the vocabulary (given, the run folder's, or trained on the training text),
// and the pairs (sentences) encoded, with what the training learns from them.
#include <functional>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/vocab.h"
#include "dist/communicator.h"
#include "train/objective.h"
#include "train/options.h"
#include "train/validation.h"

namespace tfm {

struct TrainingCorpus {
  Vocab vocab;                    // rank 0's, sent to every rank
  std::vector<Example> examples;  // the training pairs within max_tokens (a language model's: tgt only)
  ValidData valid;                // rank 0's
  bool validates = false;         // whether rank 0 has a validation set, known to every rank
  Objective objective;            // translation, causal or masked LM, by the model's architecture
  int32_t mask_id = -1;           // masked LM: the vocabulary's "<mask>"
};

// That the files exist before the minutes of reading them: every rank's training files, and rank 0's
// (`root`) validation files and --vocab.
void check_input_files(const TrainOptions& o, bool root);

// Every rank reads the training files (and checks that their text is rank 0's); the validation
// files and the vocabulary are rank 0's. A language model reads train_text and valid_text; a
// masked LM's vocabulary has "<mask>" (added when trained here; a given one without it is an error). `message` receives progress lines (rank 0's are shown).
TrainingCorpus prepare_corpus(const TrainOptions& o, dist::Communicator& comm,
                              const std::function<void(const std::string&)>& message);

}  // namespace tfm
