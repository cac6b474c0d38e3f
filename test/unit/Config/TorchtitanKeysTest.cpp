//===- TorchtitanKeysTest.cpp - torchtitan's whole config schema ----------===//
//
// Every key of torchtitan v0.1.0 and v0.2.x (Inputs/torchtitan-keys.txt) is
// in titan's schema or has a disposition in lib/Config/TorchtitanKeys.cpp,
// each disposition does what it says, and docs/config.md tabulates them
// (TITAN_UPDATE_CONFIG_DOC=1 rewrites its table).
//
//===----------------------------------------------------------------------===//

#include "TorchtitanKeys.h"

#include "ParseErrors.h"

#include "titan/Config/TrainConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <map>
#include <set>

using namespace mlir::titan;

namespace {

/// The warnings of a successful parse (a failure fails the test).
std::vector<std::string>
warningsOf(llvm::StringRef text, llvm::ArrayRef<std::string> overrides = {}) {
  llvm::Expected<TrainConfig> config =
      parseTrainConfig(text, "cfg.toml", overrides);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError()) << "\nin:\n"
                  << text.str();
    return {};
  }
  return config->warnings;
}

/// "[a.b]\nc = VALUE\n" for the key "a.b.c".
std::string configWith(llvm::StringRef key, llvm::StringRef value) {
  auto [table, name] = key.rsplit('.');
  return ("[" + table + "]\n" + name + " = " + value + "\n").str();
}

/// The keys of Inputs/torchtitan-keys.txt and their releases, in the order
/// they first appear.
struct TorchtitanSchema {
  std::vector<std::string> keys;
  std::map<std::string, std::set<std::string>> releases;
};

const TorchtitanSchema &torchtitanSchema() {
  static const TorchtitanSchema schema = [] {
    TorchtitanSchema result;
    auto buffer = llvm::MemoryBuffer::getFile(
        TITAN_SOURCE_DIR "/test/unit/Config/Inputs/torchtitan-keys.txt");
    if (!buffer) {
      ADD_FAILURE() << "cannot read torchtitan-keys.txt";
      return result;
    }
    llvm::SmallVector<llvm::StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      line = line.trim();
      if (line.empty() || line.starts_with("#"))
        continue;
      auto [release, key] = line.split(' ');
      if (!result.releases.count(key.str()))
        result.keys.push_back(key.str());
      result.releases[key.str()].insert(release.str());
    }
    return result;
  }();
  return schema;
}

/// The releases of `key` as TorchtitanKey::releases writes them.
std::string releasesOf(const std::set<std::string> &releases) {
  std::vector<std::string> parts;
  if (releases.count("v0.1.0"))
    parts.push_back("v0.1.0");
  bool v20 = releases.count("v0.2.0"), v21 = releases.count("v0.2.1"),
       v22 = releases.count("v0.2.2");
  if (v20 && v21 && v22)
    parts.push_back("v0.2.x");
  else if (v21 && v22)
    parts.push_back("v0.2.1+");
  else
    for (const char *release : {"v0.2.0", "v0.2.1", "v0.2.2"})
      if (releases.count(release))
        parts.push_back(release);
  if (releases.count("v0.2.x-ft"))
    parts.push_back("v0.2.x (ft)");
  return llvm::join(parts, ", ");
}

std::set<std::string> titanKeys() {
  std::set<std::string> keys;
  for (auto &[key, type] : getTitanConfigKeys())
    keys.insert(key);
  return keys;
}

TEST(TorchtitanKeys, EveryKeyOfBothReleasesHasADisposition) {
  const TorchtitanSchema &schema = torchtitanSchema();
  ASSERT_GT(schema.keys.size(), 150u);
  std::set<std::string> titan = titanKeys();
  for (const std::string &key : schema.keys)
    EXPECT_TRUE(titan.count(key) || lookupTorchtitanKey(key))
        << key << " is neither in titan's schema nor in TorchtitanKeys.cpp";
  for (const TorchtitanKey &key : getTorchtitanKeys()) {
    // No entry shadows a titan key or is not torchtitan's.
    EXPECT_FALSE(titan.count(key.name)) << key.name << " is titan's";
    ASSERT_TRUE(schema.releases.count(key.name))
        << key.name << " is in no release of torchtitan";
    EXPECT_EQ(key.releases, releasesOf(schema.releases.at(key.name)))
        << key.name;
    EXPECT_NE(llvm::StringRef(key.text), "") << key.name;
    if (key.disposition == TorchtitanDisposition::Refused) {
      EXPECT_NE(llvm::StringRef(key.fix), "") << key.name;
    }
  }
}

TEST(TorchtitanKeys, MappedKeysNameATitanKeyOfTheirType) {
  std::map<std::string, ConfigValueType> titan;
  for (auto &[key, type] : getTitanConfigKeys())
    titan[key] = type;
  for (const TorchtitanKey &key : getTorchtitanKeys()) {
    if (key.disposition != TorchtitanDisposition::Mapped)
      continue;
    ASSERT_TRUE(titan.count(key.values)) << key.name << " -> " << key.values;
    EXPECT_EQ(titan[key.values], key.type) << key.name;
  }
}

/// A value of `type` that no quiet value of these tables equals.
std::string loudValue(const TorchtitanKey &key) {
  switch (key.type) {
  case ConfigValueType::Boolean:
    return llvm::StringRef(key.values) == "true" ? "false" : "true";
  case ConfigValueType::Integer:
    return "12345";
  case ConfigValueType::Number:
    return "0.125";
  case ConfigValueType::String:
    return "\"zzz\"";
  case ConfigValueType::StringList:
  case ConfigValueType::Any:
    return "[\"zzz\"]";
  case ConfigValueType::NumberList:
    return "[7]";
  case ConfigValueType::StringListList:
    return "[[\"zzz\"]]";
  }
  return "";
}

TEST(TorchtitanKeys, EachDispositionDoesWhatItSays) {
  for (const TorchtitanKey &key : getTorchtitanKeys()) {
    if (key.disposition == TorchtitanDisposition::Mapped)
      continue;
    SCOPED_TRACE(key.name);
    // The quiet values load without a word.
    llvm::SmallVector<llvm::StringRef> quiet;
    llvm::StringRef(key.values).split(quiet, " | ", -1, false);
    for (llvm::StringRef value : quiet)
      EXPECT_EQ(warningsOf(configWith(key.name, value)),
                std::vector<std::string>());
    std::string loud = loudValue(key);
    std::string text = configWith(key.name, loud);
    switch (key.disposition) {
    case TorchtitanDisposition::Ignored:
      EXPECT_EQ(warningsOf(text), std::vector<std::string>());
      break;
    case TorchtitanDisposition::Noted:
      EXPECT_EQ(warningsOf(text),
                std::vector<std::string>{std::string(key.name) + " = " + loud +
                                         ": " + key.text});
      break;
    case TorchtitanDisposition::Refused:
      EXPECT_EQ(errorOf(text), "cfg.toml:2: " + std::string(key.name) + " = " +
                                   loud + " is not supported (" + key.text +
                                   "); " + key.fix);
      break;
    case TorchtitanDisposition::Mapped:
      break;
    }
  }
}

TEST(TorchtitanKeys, RefusedKeysNameTheCapabilityAndTheFix) {
  EXPECT_EQ(errorOf("[model]\nconverters = [\"float8\"]\n"),
            "cfg.toml:2: model.converters = [\"float8\"] is not supported "
            "(titan has no model converters: torchtitan's float8 and MX "
            "converters swap nn.Linear for low-precision matmuls, which "
            "changes the numerics); remove them (model.converters = [])");
  // CPU offload is the CPU backend's way already (titan-compile refuses it
  // for CUDA).
  EXPECT_EQ(errorOf("[training]\nenable_cpu_offload = true\n"), "");
  EXPECT_EQ(errorOf("[fault_tolerance]\nenable = true\n"),
            "cfg.toml:2: fault_tolerance.enable = true is not supported "
            "(titan has no fault tolerance (TorchFT): a rank that dies stops "
            "the job); set it to false");
  // An override names itself.
  EXPECT_EQ(errorOf("", {"model.converters=[\"quantize.linear.mx\"]"}),
            "override 'model.converters=[\"quantize.linear.mx\"]':2: "
            "model.converters = [\"quantize.linear.mx\"] is not supported "
            "(titan has no model converters: torchtitan's float8 and MX "
            "converters swap nn.Linear for low-precision matmuls, which "
            "changes the numerics); remove them (model.converters = [])");
}

TEST(TorchtitanKeys, ValidationIsCheckedWhenEnabled) {
  // torchtitan's defaults, off: nothing is checked.
  EXPECT_EQ(errorOf("[validation]\nenable = false\nfreq = 0\n"), "");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = "
                    "\"val.txt\"\nfreq = 5\nsteps = 3\n"),
            "");
  EXPECT_EQ(errorOf("[validation]\nenable = true\nfreq = 5\n"),
            "cfg.toml: 'validation.dataset_path' is empty: titan reads "
            "validation data from a local file or folder (text, JSON lines or "
            "token ids; docs/data.md), not from the Hugging Face hub that "
            "torchtitan's \"c4_validation\" downloads from: set it to one");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "freq = 0\n"),
            "cfg.toml: 'validation.freq' must be at least 1, got 0");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "steps = 0\n"),
            "cfg.toml: 'validation.steps' must be positive or -1 (one pass "
            "over the dataset), got 0");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "local_batch_size = 0\n"),
            "cfg.toml: 'validation.local_batch_size' must be at least 1");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "seq_len = 0\n"),
            "cfg.toml: 'validation.seq_len' must be at least 1");
  // Under a pipeline a validation batch is cut into its microbatches.
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "local_batch_size = 4\n[parallelism]\n"
                    "pipeline_parallel_degree = 2\n"
                    "pipeline_parallel_microbatch_size = 2\n"),
            "");
  EXPECT_EQ(errorOf("[validation]\nenable = true\ndataset_path = \"v\"\n"
                    "local_batch_size = 3\n[parallelism]\n"
                    "pipeline_parallel_degree = 2\n"
                    "pipeline_parallel_microbatch_size = 2\n"),
            "cfg.toml: 'validation.local_batch_size' = 3 is not divisible by "
            "'parallelism.pipeline_parallel_microbatch_size' = 2: under "
            "pipeline parallelism a validation batch runs through the "
            "pipeline as microbatches of that size; make it a multiple of "
            "the microbatch size");
}

TEST(TorchtitanKeys, AnOverrideDecidesAsInTorchtitan) {
  // The command line wins over the file, both ways.
  EXPECT_EQ(
      errorOf("[model]\nconverters = [\"float8\"]\n", {"model.converters=[]"}),
      "");
  EXPECT_NE(
      errorOf("[model]\nconverters = []\n", {"model.converters=[\"float8\"]"}),
      "");
  EXPECT_EQ(warningsOf("[metrics]\nenable_tensorboard = true\n",
                       {"metrics.enable_tensorboard=false"}),
            std::vector<std::string>());
}

TEST(TorchtitanKeys, TotalStepsIsTheScheduleSpan) {
  // A run of fewer steps follows the longer curve, quietly.
  EXPECT_EQ(errorOf("[training]\nsteps = 30\n[lr_scheduler]\ntotal_steps = "
                    "40\n"),
            "");
  EXPECT_EQ(warningsOf("[training]\nsteps = 30\n[lr_scheduler]\n"
                       "total_steps = 40\n"),
            std::vector<std::string>());
  // A longer run keeps the last rate, with a warning.
  EXPECT_EQ(
      warningsOf("[lr_scheduler]\ntotal_steps = 20\n", {"training.steps=30"}),
      std::vector<std::string>(
          {"lr_scheduler.total_steps = 20 ends the learning-rate "
           "schedule before training.steps = 30: the steps after it "
           "keep its last rate (torchtitan's decay would go on past "
           "its end)"}));
  EXPECT_EQ(errorOf("[lr_scheduler]\ntotal_steps = 0\n"),
            "cfg.toml: 'lr_scheduler.total_steps' must be at least 1 (leave "
            "it out to span training.steps)");
}

TEST(TorchtitanKeys, NotedKeysSayWhatTitanDoesInstead) {
  EXPECT_EQ(warningsOf("[metrics]\nenable_tensorboard = true\nsave_tb_folder "
                       "= \"tb\"\n"),
            std::vector<std::string>{
                "metrics.enable_tensorboard = true: titan writes no "
                "TensorBoard events; the executable logs its metrics every "
                "metrics.log_freq steps"});
  EXPECT_EQ(warningsOf("[compile]\nenable = true\ncomponents = [\"model\", "
                       "\"loss\"]\n"),
            std::vector<std::string>{
                "compile.enable = true: titan compiles the whole training "
                "step ahead of time, whatever this says"});
  EXPECT_EQ(warningsOf("[training]\ngc_freq = 10\n"),
            std::vector<std::string>{"training.gc_freq = 10: titan's "
                                     "executable has no Python garbage "
                                     "collector"});
  EXPECT_EQ(warningsOf("[job]\nprint_config = true\n"),
            std::vector<std::string>{
                "job.print_config = true: titan does not print the resolved "
                "config (titan-compile --plan-report writes the mesh, "
                "placements and predictions it compiled for)"});
  // The value that asks for nothing says nothing.
  EXPECT_EQ(warningsOf("[training]\ngc_freq = 50\n[compile]\nenable = "
                       "false\n"),
            std::vector<std::string>());
}

TEST(TorchtitanKeys, MappedKeysSetTitansField) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(R"(
[model]
hf_assets_path = "./assets/hf/Llama-3.1-8B"
[lr_scheduler]
lr_min = 0.1
[checkpoint]
enable_checkpoint = true
initial_load_model_weights_only = false
last_save_model_weights_only = true
[debug]
seed = 7
deterministic = true
)",
                                                        "cfg.toml");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->tokenizerPath, "./assets/hf/Llama-3.1-8B");
  EXPECT_DOUBLE_EQ(config->lrScheduler.minLrFactor, 0.1);
  EXPECT_TRUE(config->checkpoint.enable);
  EXPECT_FALSE(config->checkpoint.initialLoadModelOnly);
  EXPECT_TRUE(config->checkpoint.modelWeightsOnly);
  EXPECT_EQ(config->training.seed, 7);
  EXPECT_TRUE(config->training.deterministic);
  // Type errors name the key as written.
  EXPECT_EQ(errorOf("[lr_scheduler]\nlr_min = \"low\"\n"),
            "cfg.toml:2: 'lr_scheduler.lr_min' must be a number");
}

TEST(TorchtitanKeys, ValuesOfAnyTomlTypeAreTypeChecked) {
  EXPECT_EQ(errorOf("[metrics]\nenable_tensorboard = \"yes\"\n"),
            "cfg.toml:2: 'metrics.enable_tensorboard' must be true or false");
  EXPECT_EQ(errorOf("[model]\nconverters = \"float8\"\n"),
            "cfg.toml:2: 'model.converters' must be an array of strings");
  // Nested tables, however written, and list-of-lists values.
  EXPECT_EQ(errorOf(R"(
[quantize.linear.float8]
filter_fqns = ["output"]
[quantize]
grouped_mm.mx.fqns = "experts"
[training.dataloader]
num_workers = 0
[validation]
dataloader = { pin_memory = true }
[parallelism]
module_fqns_per_model_part = [["tok_embeddings", "layers.0"], ["norm"]]
)"),
            "");
  EXPECT_EQ(errorOf("[training]\ndataloader = 3\n"),
            "cfg.toml:2: 'training.dataloader' must be a table "
            "([training.dataloader])");
}

TEST(TorchtitanKeys, TyposStillGetDidYouMean) {
  EXPECT_EQ(errorOf("[compile]\nenabel = true\n"),
            "cfg.toml:2: unknown key 'compile.enabel' (did you mean "
            "'enable'?)");
  EXPECT_EQ(errorOf("[compil]\nenable = true\n"),
            "cfg.toml:1: unknown section [compil] (did you mean 'compile'?)");
  EXPECT_EQ(errorOf("[quantize.linear.float8]\nfilter_fqn = []\n"),
            "cfg.toml:2: unknown key 'quantize.linear.float8.filter_fqn' "
            "(did you mean 'filter_fqns'?)");
  EXPECT_EQ(errorOf("[metrics]\nenable_tensorbord = true\n"),
            "cfg.toml:2: unknown key 'metrics.enable_tensorbord' (did you "
            "mean 'enable_tensorboard'?)");
  EXPECT_EQ(errorOf("[training]\ngc_freqq = 1\n"),
            "cfg.toml:2: unknown key 'training.gc_freqq' (did you mean "
            "'gc_freq'?)");
  EXPECT_EQ(errorOf("", {"debug.sed=3"}),
            "override 'debug.sed=3':2: unknown key 'debug.sed' (did you mean "
            "'seed'?)");
}

//===----------------------------------------------------------------------===//
// docs/config.md's table
//===----------------------------------------------------------------------===//

/// What titan does with `key` (a torchtitan key), as docs/config.md says.
std::string dispositionText(llvm::StringRef name,
                            const std::set<std::string> &titan) {
  if (titan.count(name.str()))
    return "honoured (titan's schema)";
  const TorchtitanKey *key = lookupTorchtitanKey(name);
  if (!key)
    return "MISSING";
  auto quietValues = [&] {
    llvm::SmallVector<llvm::StringRef> values;
    llvm::StringRef(key->values).split(values, " | ", -1, false);
    std::vector<std::string> quoted;
    for (llvm::StringRef value : values)
      quoted.push_back(("`" + value + "`").str());
    return llvm::join(quoted, " or ");
  };
  std::string text = key->text;
  switch (key->disposition) {
  case TorchtitanDisposition::Mapped:
    return "mapped to `" + std::string(key->values) + "`: " + text;
  case TorchtitanDisposition::Ignored:
    return "ignored: " + text;
  case TorchtitanDisposition::Noted:
    return (llvm::StringRef(key->values).empty()
                ? std::string("noted")
                : "noted unless " + quietValues()) +
           ": " + text;
  case TorchtitanDisposition::Refused:
    return "refused unless " + quietValues() + ": " + text + "; " + key->fix;
  }
  return "";
}

/// The generated part of docs/config.md.
std::string renderDocTable() {
  const TorchtitanSchema &schema = torchtitanSchema();
  std::set<std::string> titan = titanKeys();
  std::vector<std::string> sections;
  std::map<std::string, std::vector<std::string>> bySection;
  for (const std::string &key : schema.keys) {
    std::string section = llvm::StringRef(key).split('.').first.str();
    if (!bySection.count(section))
      sections.push_back(section);
    bySection[section].push_back(key);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &section : sections) {
    os << "\n### [" << section << "]\n\n| key | releases | titan |\n|---|---|"
       << "---|\n";
    for (const std::string &key : bySection[section]) {
      std::string what = dispositionText(key, titan);
      // Markdown tables take no bare '|'.
      std::string escaped;
      for (char c : what)
        escaped += c == '|' ? std::string("\\|") : std::string(1, c);
      os << "| `" << key << "` | " << releasesOf(schema.releases.at(key))
         << " | " << escaped << " |\n";
    }
  }
  // titan's keys that torchtitan does not have.
  std::set<std::string> torchtitan(schema.keys.begin(), schema.keys.end());
  os << "\n### titan's own keys\n\n";
  for (auto &[key, type] : getTitanConfigKeys())
    if (!torchtitan.count(key))
      os << "- `" << key << "`\n";
  return text;
}

TEST(TorchtitanKeys, DocsTabulateTheTable) {
  std::string path = TITAN_SOURCE_DIR "/docs/config.md";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(buffer)) << "cannot read " << path;
  llvm::StringRef doc = (*buffer)->getBuffer();
  llvm::StringRef begin = "<!-- BEGIN torchtitan-keys (generated by "
                          "TorchtitanKeysTest) -->\n";
  llvm::StringRef end = "<!-- END torchtitan-keys -->";
  size_t from = doc.find(begin), to = doc.find(end);
  ASSERT_NE(from, llvm::StringRef::npos);
  ASSERT_NE(to, llvm::StringRef::npos);
  from += begin.size();
  std::string expected = renderDocTable();
  if (std::getenv("TITAN_UPDATE_CONFIG_DOC")) {
    std::string updated =
        (doc.take_front(from) + expected + doc.drop_front(to)).str();
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    ASSERT_FALSE(error) << error.message();
    os << updated;
    return;
  }
  EXPECT_EQ(doc.slice(from, to).str(), expected)
      << "docs/config.md is out of date: rerun with "
         "TITAN_UPDATE_CONFIG_DOC=1";
}

} // namespace
