// Options read from JSON config files and flags: strict types, one message per option at fault.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_field.h"
#include "model/config.h"
#include "train/options.h"

namespace tfm {
namespace {

// The message of the Error that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Options, JsonFieldsKeepTheirTypes) {
  int64_t i = 0;
  read_json_field(nlohmann::json(12), i, "test", "n");
  EXPECT_EQ(i, 12);
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(5.7), i, "test", "n"); }).find("'n' must be an integer, got 5.7"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(true), i, "test", "n"); }), "");
  int32_t small = 0;
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(3'000'000'000LL), small, "test", "n"); }).find("in range"),
            std::string::npos);
  uint64_t u = 0;
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(-1), u, "test", "n"); }).find("in range"), std::string::npos);
  double d = 0;
  read_json_field(nlohmann::json(3), d, "test", "x");  // an integer is a number
  EXPECT_EQ(d, 3.0);
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json("3"), d, "test", "x"); }).find("must be a number"),
            std::string::npos);
  bool b = false;
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(1), b, "test", "flag"); }).find("true or false"),
            std::string::npos);
  std::string s;
  EXPECT_NE(error_of([&] { read_json_field(nlohmann::json(1), s, "test", "name"); }).find("a string"),
            std::string::npos);
}

TEST(Options, TrainingConfigRefusesFractionsAndUnknownFields) {
  TrainOptions o;
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"max_steps", 5.7}}, o); })
                .find("training option 'max_steps' must be an integer, got 5.7"),
            std::string::npos);
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"max_step", 5}}, o); }).find("unknown training option 'max_step'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"model", {{"d_model", 12.5}}}}, o); })
                .find("model config field 'd_model' must be an integer"),
            std::string::npos);
  from_json(nlohmann::json{{"max_steps", 7}, {"lr_factor", 2}, {"resume", true}}, o);
  EXPECT_EQ(o.max_steps, 7);
  EXPECT_EQ(o.lr_factor, 2.0);
  EXPECT_TRUE(o.resume);
}

TEST(Options, ModelOverridesMapOntoTheModelObject) {
  TrainOptions o;
  EXPECT_EQ(nlohmann::json(o)["model"], nlohmann::json::object());
  from_json(nlohmann::json{{"preset", "tiny"}, {"model", {{"d_model", 64}, {"pre_norm", true}}}}, o);
  from_json(nlohmann::json{{"model", {{"dropout", 0.25}}}}, o);  // merged over the fields already set
  ASSERT_TRUE(o.model.d_model && o.model.pre_norm && o.model.dropout);
  EXPECT_EQ(*o.model.d_model, 64);
  EXPECT_FALSE(o.model.heads.has_value());
  EXPECT_EQ(nlohmann::json(o)["model"], (nlohmann::json{{"d_model", 64}, {"dropout", 0.25}, {"pre_norm", true}}));
  const ModelConfig c = o.resolved_model(100);
  EXPECT_EQ(c.d_model, 64);
  EXPECT_EQ(c.d_ff, model_preset("tiny").d_ff);  // the preset's where not overridden
  EXPECT_TRUE(c.pre_norm);
  EXPECT_EQ(c.dropout, 0.25);
  EXPECT_EQ(c.vocab_size, 100);
  // The JSON form reads back to the same options.
  TrainOptions back;
  from_json(nlohmann::json(o), back);
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(o));
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"model", {{"d_modle", 8}}}}, o); })
                .find("unknown model config field 'd_modle'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"model", 3}}, o); }).find("'model' must be an object, got number"),
            std::string::npos);
  EXPECT_EQ(*o.model.d_model, 64);  // a failed read leaves the field as it was
  o.model.heads = 5;
  EXPECT_NE(error_of([&] { o.resolved_model(100); }).find("d_model 64 is not divisible by heads 5"), std::string::npos);
}

TEST(Options, EachOutOfRangeOptionIsNamed) {
  auto invalid = [](auto set) {
    TrainOptions o;
    o.train_source = o.train_target = "x";
    set(o);
    return error_of([&] { o.validate(); });
  };
  EXPECT_NE(invalid([](TrainOptions& o) { o.keep_last = 0; }).find("keep_last must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(invalid([](TrainOptions& o) { o.threads = -1; }).find("threads must be in [0, 1024] (0: all cores), got -1"),
            std::string::npos);
  EXPECT_NE(invalid([](TrainOptions& o) { o.threads = 100000; }).find("threads must be in [0, 1024] (0: all cores), got 100000"),
            std::string::npos);
  EXPECT_NE(invalid([](TrainOptions& o) { o.save_every = 0; }).find("save_every must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(invalid([](TrainOptions& o) { o.max_epochs = -2; }).find("max_epochs must be >= 0, got -2"), std::string::npos);
  EXPECT_EQ(invalid([](TrainOptions&) {}), "");
}

TEST(Options, EveryTrainingOptionHasHelp) {
  const TrainOptions defaults;
  const nlohmann::json fields = defaults;
  for (const auto& [field, value] : fields.items()) {
    if (field == "model") continue;
    EXPECT_STRNE(train_option_help(field), "") << field;
  }
  EXPECT_STREQ(train_option_help("no_such_option"), "");
}

TEST(Options, SpecialIdsMustDiffer) {
  ModelConfig c = model_preset("tiny");
  c.validate();
  c.pad_id = c.unk_id;
  EXPECT_NE(error_of([&] { c.validate(); }).find("pad_id and unk_id must differ, both are 1"), std::string::npos);
}

// Further end-of-sequence ids: read from JSON as a list of ids, recorded in a model file only when
// there are some, and validated naming the field and the id at fault.
TEST(Options, StopIdsAreAListOfFurtherEndIds) {
  ModelConfig c = model_preset("tiny");  // pad 0, unk 1, bos 2, eos 3, 8000 ids
  EXPECT_FALSE(model_config_for_file(c).contains("stop_ids"));
  from_json(nlohmann::json{{"stop_ids", {7, 9}}}, c);
  EXPECT_EQ(c.stop_ids, (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(model_config_for_file(c)["stop_ids"], nlohmann::json({7, 9}));
  c.validate();
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"stop_ids", 7}}, c); }).find("'stop_ids' must be a list, got 7"),
            std::string::npos);
  EXPECT_NE(error_of([&] { from_json(nlohmann::json{{"stop_ids", {7, 1.5}}}, c); })
                .find("'stop_ids[1]' must be an integer, got 1.5"),
            std::string::npos);
  const auto invalid = [&](std::vector<int32_t> ids) {
    ModelConfig d = model_preset("tiny");
    d.stop_ids = std::move(ids);
    return error_of([&] { d.validate(); });
  };
  EXPECT_EQ(invalid({4, 7999}), "");
  EXPECT_NE(invalid({4, 8000}).find("stop_ids: id 8000 is outside the vocabulary [0, 8000)"), std::string::npos);
  EXPECT_NE(invalid({-1}).find("stop_ids: id -1 is outside"), std::string::npos);
  EXPECT_NE(invalid({5, 3}).find("stop_ids: id 3 is the model's eos_id"), std::string::npos);
  EXPECT_NE(invalid({0}).find("stop_ids: id 0 is the model's pad_id"), std::string::npos);
  EXPECT_NE(invalid({2}).find("stop_ids: id 2 is the model's bos_id"), std::string::npos);
  EXPECT_NE(invalid({9, 5, 9}).find("stop_ids lists id 9 twice"), std::string::npos);
}

}  // namespace
}  // namespace tfm
