#include "model/checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace tfm {

void save_model(const Transformer& model, const std::string& path, const std::map<std::string, std::string>& extra,
                const std::vector<NamedTensor>& extra_tensors) {
  std::map<std::string, std::string> metadata = extra;
  metadata["format"] = kModelFormat;
  metadata["format_version"] = kModelFormatVersion;
  metadata["config"] = model_config_for_file(model.config()).dump();
  std::vector<NamedTensor> tensors;
  const ParamStore& p = model.params();
  // The file is written from host memory: parameters on a device are copied over first.
  const Tensor values = p.values().to_host();  // every parameter's elements, one after another
  for (int id = 0; id < p.size(); ++id) {
    // The parameter's shape: [V, D], [out, in], [out] or [D].
    const Tensor v = values.view({values.numel()}).rows(p.offset(id), p.shape(id).numel()).view(p.shape(id));
    tensors.push_back({p.name(id), v.dtype() == DType::F32 ? v : v.to(DType::F32)});
  }
  for (const NamedTensor& t : extra_tensors)
    tensors.push_back({t.name, t.tensor.to_host()});
  write_safetensors(path, metadata, tensors);
}

ModelConfig read_model_config(const SafetensorsFile& file) {
  const auto& meta = file.metadata();
  auto format = meta.find("format");
  TFM_CHECK(format != meta.end() && format->second == kModelFormat, "not a model file of this program: metadata 'format' is ",
            format == meta.end() ? std::string("missing") : "'" + format->second + "'", ", expected '", kModelFormat,
            "'");
  auto version = meta.find("format_version");
  TFM_CHECK(version != meta.end() && (version->second == kModelFormatVersion || version->second == "1"),
            "unsupported model format version ",
            version == meta.end() ? std::string("(missing)") : "'" + version->second + "'", ", expected '",
            kModelFormatVersion, "' (or '1', of older versions)");
  // From version 2 on, a file without its checksum has lost it (its key damaged, say).
  TFM_CHECK(version->second == "1" || file.has_checksum(), "model format version ", version->second,
            " records a checksum, but this file has no '", kChecksumKey, "' in its metadata: it is corrupt");
  auto text = meta.find("config");
  TFM_CHECK(text != meta.end(), "the model file has no 'config' in its metadata");
  ModelConfig c;
  const nlohmann::json j = parse_json(text->second, cat(file.source(), ": metadata 'config'"));
  try {
    from_json(j, c);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("the model configuration in the file does not fit: ", e.what()));
  }
  c.validate();
  return c;
}

namespace {

// Errors name the file: "PATH: what".
Error naming(const std::string& source, const Error& e) {
  const std::string what = e.what();
  return Error(what.starts_with(source) ? what : cat(source, ": ", what));
}

std::unique_ptr<Transformer> build_and_load(const SafetensorsFile& file, DType dtype, Checksums checksums) {
  const ModelConfig c = read_model_config(file);
  // Check the size the configuration implies against the file before allocating anything.
  int64_t in_file = 0;
  for (const std::string& n : file.names())
    if (!n.starts_with("optimizer.")) in_file += file.shape(n).numel();
  const int64_t needed = parameter_count(c);
  TFM_CHECK(in_file == needed, "the model file holds ", in_file, " parameter values but its configuration needs ",
            needed);
  auto model = std::make_unique<Transformer>(c, dtype);
  const ParamStore& p = model->params();
  for (int id = 0; id < p.size(); ++id) {
    const std::string& n = p.name(id);
    TFM_CHECK(file.has(n), "the model file has no tensor '", n, "'");
    TFM_CHECK(file.shape(n) == p.shape(id), "tensor '", n, "' has shape ", file.shape(n),
              " but the configuration needs ", p.shape(id));
    const DType dt = file.dtype(n);
    TFM_CHECK(dt == DType::F32 || dt == DType::F64, "tensor '", n, "' has dtype ", name(dt),
              ", expected float32");
  }
  for (const std::string& n : file.names())
    TFM_CHECK(n.starts_with("optimizer.") || p.find(n) >= 0, "the model file has a tensor '", n,
              "' that is not a parameter of this model");
  // One pass over the file in its order: each parameter straight into the model (or, in another
  // dtype, into a copy converted afterwards), hashed and checked on the way.
  std::map<int, Tensor> converted;  // by parameter id, in the parameter's shape
  Tensor target;                    // the parameter being read, in its shape
  file.read_tensors(
      [&](const std::string& n) -> const Tensor* {
        const int id = p.find(n);
        if (id < 0) return nullptr;  // optimizer state
        if (file.dtype(n) != dtype) return &(converted[id] = Tensor::empty(p.shape(id), file.dtype(n)));
        target = p.value(id);
        return &target;
      },
      checksums == Checksums::kVerify);
  for (const auto& [id, t] : converted) p.value(id).copy_from(t.to(dtype));
  return model;
}

}  // namespace

std::unique_ptr<Transformer> load_model(const SafetensorsFile& file, DType dtype, Checksums checksums) {
  try {
    return build_and_load(file, dtype, checksums);
  } catch (const Error& e) {
    throw naming(file.source(), e);
  }
}

std::unique_ptr<Transformer> load_model(const std::string& path, DType dtype, Checksums checksums) {
  try {
    return load_model(SafetensorsFile::read(path), dtype, checksums);
  } catch (const Error& e) {
    throw naming(path, e);
  }
}

}  // namespace tfm
