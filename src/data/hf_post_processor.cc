// tokenizer.json's post-processors, as the ids they put around one sequence: TemplateProcessing
// (its "single" template), BertProcessing and RobertaProcessing (cls … sep), ByteLevel (none) and
// Sequence (each in turn).
#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_components.h"

namespace tfm::hf {
namespace {

// A [token, id] pair of BertProcessing and RobertaProcessing.
int32_t pair_id(const nlohmann::json& spec, const std::string& key, const Where& where) {
  const auto& p = required(spec, key, where);
  if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number_integer() || p[1].get<int64_t>() < 0) {
    where[key].fail(cat("must be [token, id], got ", json_quote(p)));
  }
  return p[1].get<int32_t>();
}

std::vector<int32_t> special_ids(const nlohmann::json& specials, const std::string& name, const Where& where) {
  if (!specials.is_object() || !specials.contains(name)) where.fail(cat("special token '", name, "' is not defined"));
  const auto& ids = required(specials[name], "ids", where[name]);
  std::vector<int32_t> out;
  for (size_t i = 0; i < (ids.is_array() ? ids.size() : 0); ++i) {
    if (!ids[i].is_number_integer() || ids[i].get<int64_t>() < 0) where[name]["ids"][i].fail("must be an id");
    out.push_back(ids[i].get<int32_t>());
  }
  if (!ids.is_array()) where[name]["ids"].fail(cat("must be a list of ids, got ", json_quote(ids)));
  return out;
}

PostProcessor template_processing(const nlohmann::json& spec, const Where& where) {
  const auto& single = required(spec, "single", where);
  if (!single.is_array()) where["single"].fail(cat("must be a list, got ", json_quote(single)));
  const nlohmann::json specials = spec.value("special_tokens", nlohmann::json::object());
  PostProcessor out;
  int sequences = 0;
  for (size_t i = 0; i < single.size(); ++i) {
    const auto& piece = single[i];
    const Where w = where["single"][i];
    if (piece.is_object() && piece.contains("SpecialToken")) {
      const std::string name = get_string(piece["SpecialToken"], "id", "", w["SpecialToken"]);
      for (int32_t id : special_ids(specials, name, where["special_tokens"])) {
        (sequences == 0 ? out.prefix : out.suffix).push_back(id);
      }
    } else if (piece.is_object() && piece.contains("Sequence")) {
      const std::string id = get_string(piece["Sequence"], "id", "", w["Sequence"]);
      if (id != "A") w["Sequence"]["id"].fail(cat("a single sequence's template can only hold $A, got '", id, "'"));
      ++sequences;
    } else {
      w.fail(cat("must be {\"SpecialToken\": ...} or {\"Sequence\": ...}, got ", json_quote(piece)));
    }
  }
  if (sequences != 1) where["single"].fail(cat("must hold the sequence $A once, holds it ", sequences, " times"));
  return out;
}

}  // namespace

PostProcessor make_post_processor(const nlohmann::json& spec, const Where& where) {
  if (spec.is_null()) return {};
  const std::string type = type_of(spec, where);
  if (type == "TemplateProcessing") return template_processing(spec, where);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return {{pair_id(spec, "cls", where)}, {pair_id(spec, "sep", where)}};
  }
  if (type == "ByteLevel") return {};
  if (type == "Sequence") {
    const auto& list = required(spec, "processors", where);
    if (!list.is_array()) where["processors"].fail(cat("must be a list, got ", json_quote(list)));
    PostProcessor out;
    for (size_t i = 0; i < list.size(); ++i) {
      const PostProcessor p = make_post_processor(list[i], where["processors"][i]);
      out.prefix.insert(out.prefix.begin(), p.prefix.begin(), p.prefix.end());
      out.suffix.insert(out.suffix.end(), p.suffix.begin(), p.suffix.end());
    }
    return out;
  }
  where["type"].fail(cat("post-processor '", type,
                         "' is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, "
                         "ByteLevel, Sequence)"));
}

}  // namespace tfm::hf
