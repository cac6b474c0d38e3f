//===- TorchtitanKeys.cpp - torchtitan's config keys titan lacks ----------===//
//
// The table of torchtitan's keys (TorchtitanKeys.h) and the fallback that
// applies it. Every entry was decided by what the key does in torchtitan
// v0.1.0 and v0.2.x; docs/config.md lists them all.
//
//===----------------------------------------------------------------------===//

#include "TorchtitanKeys.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>
#include <sstream>
#include <tuple>

using namespace mlir::titan;

namespace {

using T = ConfigValueType;
using D = TorchtitanDisposition;

// Reasons shared by several keys.
constexpr const char *kNoConverter =
    "only read by torchtitan's float8 / MX converters (model.converters), "
    "which titan refuses";
constexpr const char *kNoFaultTolerance =
    "only read with fault_tolerance.enable, which titan refuses";
constexpr const char *kCompiles =
    "titan compiles the whole training step ahead of time, whatever this says";
constexpr const char *kNoGc =
    "titan's executable has no Python garbage collector";
constexpr const char *kNoWorkers = "titan's executable reads its batches "
                                   "without PyTorch DataLoader workers";
constexpr const char *kNoMoe =
    "only read by mixture-of-experts models; titan's models have none";
constexpr const char *kNoConfigModule =
    "titan cannot import a Python module that extends the config (the "
    "sections it adds are unknown to titan)";
constexpr const char *kNoPrint =
    "titan does not print the resolved config (titan-compile --plan-report "
    "writes the mesh, placements and predictions it compiled for)";

const TorchtitanKey kKeys[] = {
    // [job]
    {"job.config_file", "v0.1.0, v0.2.x", T::String, D::Ignored, "",
     "torchtitan reads it from the command line only (--job.config_file); in "
     "a file it does nothing"},
    {"job.use_for_integration_test", "v0.1.0", T::Boolean, D::Ignored, "",
     "marks a config for torchtitan's own integration tests"},
    {"job.print_args", "v0.1.0", T::Boolean, D::Noted, "false", kNoPrint},
    {"job.print_config", "v0.2.x", T::Boolean, D::Noted, "false", kNoPrint},
    {"job.save_config_file", "v0.2.1+", T::String, D::Noted, "",
     "titan does not write the resolved config to a file"},
    {"job.custom_config_module", "v0.2.x", T::String, D::Refused, "\"\"",
     kNoConfigModule, "remove it"},

    // [profiling]
    {"profiling.enable_memory_snapshot", "v0.1.0, v0.2.x", T::Boolean, D::Noted,
     "false",
     "titan writes no CUDA memory snapshots: every rank's memory is planned "
     "at compile time (titan-compile --plan-report, --memory-plot)"},
    {"profiling.save_memory_snapshot_folder", "v0.1.0, v0.2.x", T::String,
     D::Ignored, "", "only read with profiling.enable_memory_snapshot"},
    {"profiling.profiler_active", "v0.2.x", T::Integer, D::Noted, "1",
     "titan's traces follow profiling.profile_freq only, without "
     "torch.profiler's warmup and active windows"},
    {"profiling.profiler_warmup", "v0.2.x", T::Integer, D::Noted, "3",
     "titan's traces follow profiling.profile_freq only, without "
     "torch.profiler's warmup and active windows"},

    // [metrics]
    {"metrics.enable_tensorboard", "v0.1.0, v0.2.x", T::Boolean, D::Noted,
     "false",
     "titan writes no TensorBoard events; the executable logs its metrics "
     "every metrics.log_freq steps"},
    {"metrics.disable_color_printing", "v0.1.0, v0.2.x", T::Boolean, D::Noted,
     "false", "titan's tools color their messages only on a terminal"},
    {"metrics.save_tb_folder", "v0.1.0, v0.2.x", T::String, D::Ignored, "",
     "only read with metrics.enable_tensorboard"},
    {"metrics.save_for_all_ranks", "v0.1.0, v0.2.x", T::Boolean, D::Ignored, "",
     "only read with TensorBoard or Weights & Biases logging"},
    {"metrics.enable_wandb", "v0.1.0, v0.2.x", T::Boolean, D::Noted, "false",
     "titan does not log to Weights & Biases; the executable logs its "
     "metrics every metrics.log_freq steps"},

    // [model]
    {"model.hf_assets_path", "v0.2.x", T::String, D::Mapped,
     "model.tokenizer_path",
     "v0.2's folder of the tokenizer (v0.1's model.tokenizer_path)"},
    {"model.converters", "v0.1.0, v0.2.x", T::StringList, D::Refused, "[]",
     "titan has no model converters: torchtitan's float8 and MX converters "
     "swap nn.Linear for low-precision matmuls, which changes the numerics",
     "remove them (model.converters = [])"},
    {"model.print_after_conversion", "v0.1.0, v0.2.x", T::Boolean, D::Noted,
     "false",
     "titan prints no module tree (titan-compile --emit=titan prints the "
     "imported program)"},

    // [optimizer]
    {"optimizer.implementation", "v0.1.0, v0.2.x", T::String, D::Ignored, "",
     "torchtitan's for-loop, foreach and fused AdamW compute the same "
     "update; titan's is its own kernel"},

    // [lr_scheduler]
    {"lr_scheduler.lr_min", "v0.1.0", T::Number, D::Mapped,
     "lr_scheduler.min_lr_factor", "v0.1's name of min_lr_factor"},

    // [training]
    {"training.compile", "v0.1.0", T::Boolean, D::Noted, "false", kCompiles},
    {"training.gc_freq", "v0.1.0, v0.2.x", T::Integer, D::Noted, "50", kNoGc},
    {"training.gc_debug", "v0.1.0, v0.2.x", T::Boolean, D::Noted, "false",
     kNoGc},
    {"training.debug_moe_force_load_balance", "v0.2.0", T::Boolean, D::Ignored,
     "", kNoMoe},
    {"training.dataloader.num_workers", "v0.2.1+", T::Integer, D::Noted, "0",
     kNoWorkers},
    {"training.dataloader.persistent_workers", "v0.2.1+", T::Boolean, D::Noted,
     "false", kNoWorkers},
    {"training.dataloader.pin_memory", "v0.2.1+", T::Boolean, D::Noted, "false",
     kNoWorkers},
    {"training.dataloader.prefetch_factor", "v0.2.1+", T::Integer, D::Noted, "",
     kNoWorkers},

    // [parallelism]
    {"parallelism.enable_compiled_autograd", "v0.1.0, v0.2.0", T::Boolean,
     D::Noted, "false",
     "titan compiles the backward ahead of time, whatever this says"},
    {"parallelism.pipeline_parallel_expert_parallel_overlap", "v0.2.1+",
     T::Boolean, D::Ignored, "",
     "only read with the DualPipeV schedule and expert parallelism, which "
     "titan refuses"},
    {"parallelism.context_parallel_rotate_method", "v0.1.0, v0.2.x", T::String,
     D::Noted, "\"allgather\"",
     "titan's context parallelism all-gathers K and V (the same attention)"},
    {"parallelism.context_parallel_load_balancer", "v0.2.2", T::String,
     D::Noted, "\"headtail\"",
     "titan balances the sequence head-tail (titan-balance-sequence); the "
     "numbers are the same"},
    {"parallelism.expert_parallel_degree", "v0.2.x", T::Integer, D::Refused,
     "1",
     "titan has no expert parallelism (a mixture of experts trains with its "
     "experts sharded by FSDP like the other weights)",
     "set it to 1"},
    {"parallelism.expert_tensor_parallel_degree", "v0.2.x", T::Integer,
     D::Refused, "1",
     "titan has no expert parallelism (a mixture of experts trains with its "
     "experts sharded by FSDP like the other weights)",
     "set it to 1"},
    {"parallelism.expert_parallel_comm_backend", "v0.2.1+", T::String,
     D::Ignored, "", "only read with expert parallelism, which titan refuses"},

    // [checkpoint]
    {"checkpoint.initial_load_model_weights_only", "v0.1.0", T::Boolean,
     D::Mapped, "checkpoint.initial_load_model_only",
     "v0.1's name of initial_load_model_only"},
    {"checkpoint.last_save_model_weights_only", "v0.1.0", T::Boolean, D::Mapped,
     "checkpoint.last_save_model_only", "v0.1's name of last_save_model_only"},
    {"checkpoint.enable_ft_dataloader_checkpoints", "v0.2.x", T::Boolean,
     D::Ignored, "", kNoFaultTolerance},
    {"checkpoint.initial_load_in_hf_quantized", "v0.2.x", T::Boolean,
     D::Refused, "false", "titan reads no quantized Hugging Face checkpoints",
     "set it to false"},

    // [activation_checkpoint]
    {"activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns",
     "v0.2.x", T::StringList, D::Ignored, "",
     "names mixture-of-experts router matmuls for op-level SAC; titan's "
     "models have none"},
    {"activation_checkpoint.early_stop", "v0.2.x", T::Boolean, D::Noted,
     "false",
     "titan's recomputation is planned at compile time; there is no early "
     "stop at run time"},
    {"activation_checkpoint.visualize_memory_budget_pareto", "v0.2.x",
     T::Boolean, D::Noted, "false",
     "titan-tune ac draws the memory / step-time Pareto front of every "
     "policy"},
    {"activation_checkpoint.preserve_rng_state", "v0.2.1+", T::Boolean,
     D::Ignored, "",
     "titan's training step draws no random numbers, so recomputation needs "
     "no RNG state"},
    {"activation_checkpoint.determinism_check", "v0.2.1+", T::String,
     D::Ignored, "",
     "torch.utils.checkpoint's check of recomputed values; titan's "
     "recomputation is a bit-identical program transform"},
    {"activation_checkpoint.debug", "v0.2.1+", T::Boolean, D::Noted, "false",
     "titan prints no torch.utils.checkpoint debug trace"},

    // [compile]
    {"compile.enable", "v0.2.x", T::Boolean, D::Noted, "false", kCompiles},
    {"compile.components", "v0.2.x", T::StringList, D::Ignored, "",
     "titan compiles the model and the loss, always"},
    {"compile.backend", "v0.2.x", T::String, D::Ignored, "",
     "titan is the compiler (no torch.compile backend)"},

    // [float8], [mx] (v0.1.0)
    {"float8.enable_fsdp_float8_all_gather", "v0.1.0", T::Boolean, D::Ignored,
     "", kNoConverter},
    {"float8.precompute_float8_dynamic_scale_for_fsdp", "v0.1.0", T::Boolean,
     D::Ignored, "", kNoConverter},
    {"float8.force_recompute_fp8_weight_in_bwd", "v0.1.0", T::Boolean,
     D::Ignored, "", kNoConverter},
    {"float8.recipe_name", "v0.1.0", T::String, D::Ignored, "", kNoConverter},
    {"float8.filter_fqns", "v0.1.0", T::StringList, D::Ignored, "",
     kNoConverter},
    {"float8.emulate", "v0.1.0", T::Boolean, D::Ignored, "", kNoConverter},
    {"mx.use_fp8_dim1_cast_triton_kernel", "v0.1.0", T::Boolean, D::Ignored, "",
     kNoConverter},
    {"mx.recipe_name", "v0.1.0", T::String, D::Ignored, "", kNoConverter},
    {"mx.filter_fqns", "v0.1.0", T::StringList, D::Ignored, "", kNoConverter},

    // [quantize] (v0.2.x)
    {"quantize.linear.float8.enable_fsdp_float8_all_gather", "v0.2.x",
     T::Boolean, D::Ignored, "", kNoConverter},
    {"quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp",
     "v0.2.x", T::Boolean, D::Ignored, "", kNoConverter},
    {"quantize.linear.float8.recipe_name", "v0.2.x", T::String, D::Ignored, "",
     kNoConverter},
    {"quantize.linear.float8.filter_fqns", "v0.2.x", T::StringList, D::Ignored,
     "", kNoConverter},
    {"quantize.linear.float8.emulate", "v0.2.x", T::Boolean, D::Ignored, "",
     kNoConverter},
    {"quantize.linear.mx.mxfp8_dim1_cast_kernel_choice", "v0.2.x", T::String,
     D::Ignored, "", kNoConverter},
    {"quantize.linear.mx.recipe_name", "v0.2.x", T::String, D::Ignored, "",
     kNoConverter},
    {"quantize.linear.mx.filter_fqns", "v0.2.x", T::StringList, D::Ignored, "",
     kNoConverter},
    {"quantize.grouped_mm.float8.fqns", "v0.2.x", T::Any, D::Ignored, "",
     kNoConverter},
    {"quantize.grouped_mm.mx.recipe_name", "v0.2.x", T::String, D::Ignored, "",
     kNoConverter},
    {"quantize.grouped_mm.mx.fqns", "v0.2.x", T::Any, D::Ignored, "",
     kNoConverter},

    // [comm]
    {"comm.init_timeout_seconds", "v0.1.0, v0.2.x", T::Integer, D::Noted, "300",
     "titan's executable waits for the other ranks up to its --timeout "
     "SECONDS (default 300)"},
    {"comm.train_timeout_seconds", "v0.1.0, v0.2.x", T::Integer, D::Noted,
     "100",
     "titan's executable waits for the other ranks up to its --timeout "
     "SECONDS (default 300)"},
    {"comm.trace_buf_size", "v0.1.0, v0.2.x", T::Integer, D::Noted, "20000",
     "titan's runtime has no NCCL flight recorder"},
    {"comm.save_traces_folder", "v0.2.x", T::String, D::Ignored, "",
     "only read by the NCCL flight recorder (comm.trace_buf_size)"},
    {"comm.save_traces_file_prefix", "v0.2.x", T::String, D::Ignored, "",
     "only read by the NCCL flight recorder (comm.trace_buf_size)"},
    {"comm.mode", "v0.2.1+", T::String, D::Refused, "\"default\"",
     "titan has no fake or local-tensor communication backend (titan-eval "
     "simulates N ranks in one process)",
     "set it to \"default\""},

    // [memory_estimation]
    {"memory_estimation.enabled", "v0.1.0", T::Boolean, D::Noted, "false",
     "titan plans every rank's memory exactly at compile time "
     "(titan-compile --plan-report)"},
    {"memory_estimation.enable", "v0.2.x", T::Boolean, D::Noted, "false",
     "titan plans every rank's memory exactly at compile time "
     "(titan-compile --plan-report)"},
    {"memory_estimation.disable_fake_mode", "v0.1.0, v0.2.x", T::Boolean,
     D::Ignored, "", "only read with memory estimation"},

    // [fault_tolerance]
    {"fault_tolerance.enable", "v0.1.0, v0.2.x", T::Boolean, D::Refused,
     "false",
     "titan has no fault tolerance (TorchFT): a rank that dies stops the job",
     "set it to false"},
    {"fault_tolerance.replica_id", "v0.1.0, v0.2.x", T::Integer, D::Ignored, "",
     kNoFaultTolerance},
    {"fault_tolerance.group_size", "v0.1.0, v0.2.x", T::Integer, D::Ignored, "",
     kNoFaultTolerance},
    {"fault_tolerance.min_replica_size", "v0.1.0, v0.2.x", T::Integer,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.semi_sync_method", "v0.1.0, v0.2.x", T::String,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.process_group", "v0.2.x", T::String, D::Ignored, "",
     kNoFaultTolerance},
    {"fault_tolerance.process_group_timeout_ms", "v0.2.x", T::Integer,
     D::Ignored, "", kNoFaultTolerance},
    // v0.1.0's, and v0.2.x's TorchFT extension (components/ft/config).
    {"fault_tolerance.sync_steps", "v0.1.0, v0.2.x (ft)", T::Integer,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.should_quantize", "v0.1.0, v0.2.x (ft)", T::Boolean,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.fragment_sync_delay", "v0.1.0, v0.2.x (ft)", T::Integer,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.fragment_update_alpha", "v0.1.0, v0.2.x (ft)", T::Number,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.module_fqns_per_model_fragment", "v0.2.x (ft)", T::Any,
     D::Ignored, "", kNoFaultTolerance},
    {"fault_tolerance.num_fragments", "v0.2.x (ft)", T::Integer, D::Ignored, "",
     kNoFaultTolerance},

    // [experimental]
    {"experimental.custom_import", "v0.1.0, v0.2.x", T::String, D::Noted,
     "\"\"",
     "titan imports no Python module: the model is the one MODEL.pt holds"},
    {"experimental.custom_args_module", "v0.1.0, v0.2.x", T::String, D::Refused,
     "\"\"", kNoConfigModule, "remove it"},

    // [validation] (v0.2.x; the rest in titan's schema)
    {"validation.dataloader.num_workers", "v0.2.1+", T::Integer, D::Ignored, "",
     kNoWorkers},
    {"validation.dataloader.persistent_workers", "v0.2.1+", T::Boolean,
     D::Ignored, "", kNoWorkers},
    {"validation.dataloader.pin_memory", "v0.2.1+", T::Boolean, D::Ignored, "",
     kNoWorkers},
    {"validation.dataloader.prefetch_factor", "v0.2.1+", T::Integer, D::Ignored,
     "", kNoWorkers},

    // [debug] (v0.2.1+)
    {"debug.seed", "v0.2.1+", T::Integer, D::Mapped, "training.seed",
     "v0.2.1's place of training.seed"},
    {"debug.deterministic", "v0.2.1+", T::Boolean, D::Mapped,
     "training.deterministic", "v0.2.1's place of training.deterministic"},
    {"debug.deterministic_warn_only", "v0.2.1+", T::Boolean, D::Ignored, "",
     "only read with debug.deterministic"},
    {"debug.moe_force_load_balance", "v0.2.1+", T::Boolean, D::Ignored, "",
     kNoMoe},
};

/// The prefixes ("a", "a.b") of every torchtitan key: its tables.
const std::set<std::string, std::less<>> &torchtitanTables() {
  static const std::set<std::string, std::less<>> tables = [] {
    std::set<std::string, std::less<>> result;
    for (const TorchtitanKey &key : kKeys) {
      llvm::StringRef name(key.name);
      for (size_t dot = name.find('.'); dot != llvm::StringRef::npos;
           dot = name.find('.', dot + 1))
        result.insert(name.take_front(dot).str());
    }
    return result;
  }();
  return tables;
}

/// Whether `node` has the type `type` asks for.
bool hasType(const toml::node &node, ConfigValueType type) {
  auto arrayOf = [&](auto isElement) {
    const toml::array *array = node.as_array();
    return array && llvm::all_of(*array, isElement);
  };
  switch (type) {
  case T::Boolean:
    return node.is_boolean();
  case T::Integer:
    return node.is_integer();
  case T::Number:
    return node.is_number();
  case T::String:
    return node.is_string();
  case T::StringList:
    return arrayOf([](const toml::node &e) { return e.is_string(); });
  case T::NumberList:
    return arrayOf([](const toml::node &e) { return e.is_number(); });
  case T::StringListList:
    return arrayOf([](const toml::node &e) {
      const toml::array *inner = e.as_array();
      return inner && llvm::all_of(*inner, [](const toml::node &s) {
               return s.is_string();
             });
    });
  case T::Any:
    return true;
  }
  return false;
}

/// What a value of `type` must be, for errors.
llvm::StringRef describe(ConfigValueType type) {
  switch (type) {
  case T::Boolean:
    return "true or false";
  case T::Integer:
    return "an integer";
  case T::Number:
    return "a number";
  case T::String:
    return "a string";
  case T::StringList:
    return "an array of strings";
  case T::NumberList:
    return "an array of numbers";
  case T::StringListList:
    return "an array of arrays of strings";
  case T::Any:
    return "a value";
  }
  return "";
}

/// `node` written as TOML, for messages.
std::string render(const toml::node &node) {
  if (const auto *text = node.as_string()) {
    std::string quoted = "\"";
    for (char c : text->get()) {
      if (c == '"' || c == '\\')
        quoted += '\\';
      quoted += c;
    }
    return quoted + "\"";
  }
  if (const auto *integer = node.as_integer())
    return std::to_string(integer->get());
  if (const auto *number = node.as_floating_point()) {
    std::ostringstream text;
    text << *number;
    return text.str();
  }
  if (const auto *flag = node.as_boolean())
    return flag->get() ? "true" : "false";
  if (const auto *array = node.as_array()) {
    std::string text = "[";
    for (const toml::node &element : *array)
      text += (text.size() > 1 ? ", " : "") + render(element);
    return text + "]";
  }
  if (const auto *table = node.as_table()) {
    std::string text = "{";
    for (const auto &[key, value] : *table)
      text += (text.size() > 1 ? ", " : "") + std::string(key.str()) + " = " +
              render(value);
    return text + "}";
  }
  return "?";
}

/// Whether two TOML values are equal (numbers by value, whatever their
/// type).
bool sameValue(const toml::node &a, const toml::node &b) {
  if (a.is_number() && b.is_number())
    return *a.value<double>() == *b.value<double>();
  if (a.type() != b.type())
    return false;
  if (const auto *text = a.as_string())
    return text->get() == b.as_string()->get();
  if (const auto *flag = a.as_boolean())
    return flag->get() == b.as_boolean()->get();
  if (const auto *array = a.as_array()) {
    const toml::array &other = *b.as_array();
    if (array->size() != other.size())
      return false;
    for (size_t i = 0; i < array->size(); ++i)
      if (!sameValue(*array->get(i), *other.get(i)))
        return false;
    return true;
  }
  return false;
}

/// Whether `node` is one of the quiet values of `key` (TOML, " | "
/// separated).
bool isQuiet(const TorchtitanKey &key, const toml::node &node) {
  llvm::SmallVector<llvm::StringRef> values;
  llvm::StringRef(key.values).split(values, " | ", -1, false);
  for (llvm::StringRef value : values) {
    toml::parse_result parsed =
        toml::parse("v = " + value.str(), std::string_view("quiet"));
    if (parsed && sameValue(node, *parsed.table().get("v")))
      return true;
  }
  return false;
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::ArrayRef<TorchtitanKey> mlir::titan::getTorchtitanKeys() { return kKeys; }

const TorchtitanKey *mlir::titan::lookupTorchtitanKey(llvm::StringRef name) {
  static const std::map<std::string, const TorchtitanKey *, std::less<>>
      byName = [] {
        std::map<std::string, const TorchtitanKey *, std::less<>> result;
        for (const TorchtitanKey &key : kKeys)
          result[key.name] = &key;
        return result;
      }();
  auto found = byName.find(name);
  return found == byName.end() ? nullptr : found->second;
}

std::optional<ConfigValueType>
mlir::titan::lookupConfigKeyType(llvm::StringRef name) {
  static const std::map<std::string, ConfigValueType, std::less<>> titan = [] {
    std::map<std::string, ConfigValueType, std::less<>> result;
    for (auto &[key, type] : getTitanConfigKeys())
      result[key] = type;
    return result;
  }();
  if (auto found = titan.find(name); found != titan.end())
    return found->second;
  if (const TorchtitanKey *key = lookupTorchtitanKey(name))
    return key->type;
  return std::nullopt;
}

std::vector<std::string> mlir::titan::getAllConfigNames() {
  std::set<std::string> names(torchtitanTables().begin(),
                              torchtitanTables().end());
  for (auto &[key, type] : getTitanConfigKeys()) {
    names.insert(key);
    names.insert(llvm::StringRef(key).split('.').first.str());
  }
  for (const TorchtitanKey &key : kKeys)
    names.insert(key.name);
  return {names.begin(), names.end()};
}

bool TorchtitanKeys::isTable(llvm::StringRef qualified) const {
  return torchtitanTables().count(qualified) != 0;
}

bool TorchtitanKeys::isKey(llvm::StringRef qualified) const {
  return lookupTorchtitanKey(qualified) != nullptr;
}

std::vector<std::string>
TorchtitanKeys::getNamesUnder(llvm::StringRef prefix) const {
  std::set<std::string> names;
  for (const TorchtitanKey &key : kKeys) {
    llvm::StringRef name(key.name);
    if (!prefix.empty() && !name.consume_front((prefix + ".").str()))
      continue;
    names.insert(name.split('.').first.str());
  }
  return {names.begin(), names.end()};
}

llvm::Error TorchtitanKeys::take(llvm::StringRef qualified,
                                 const toml::node &value,
                                 llvm::StringRef fileName) {
  const TorchtitanKey *key = lookupTorchtitanKey(qualified);
  std::string location = tomlLocation(fileName, value);
  if (!hasType(value, key->type))
    return error(location + "'" + qualified + "' must be " +
                 describe(key->type));
  if (key->disposition == D::Mapped) {
    auto [sectionName, keyName] = llvm::StringRef(key->values).split('.');
    for (const TomlSection &section : schema)
      if (section.name == sectionName)
        for (const TomlKey &target : section.keys)
          if (target.name == keyName)
            return assignTomlValue(target.target, value, qualified, fileName);
    llvm_unreachable("a mapped torchtitan key names no titan key");
  }
  size_t origin =
      origins.try_emplace(fileName.str(), origins.size()).first->second;
  Taken entry{key,
              location,
              render(value),
              isQuiet(*key, value),
              origin,
              value.source().begin ? size_t(value.source().begin.line) : 0};
  auto [it, inserted] = index.try_emplace(qualified.str(), taken.size());
  if (inserted)
    taken.push_back(std::move(entry));
  else
    taken[it->second] = std::move(entry);
  return llvm::Error::success();
}

llvm::Error TorchtitanKeys::finish(TrainConfig &config) const {
  std::vector<const Taken *> ordered;
  for (const Taken &entry : taken)
    ordered.push_back(&entry);
  llvm::stable_sort(ordered, [](const Taken *a, const Taken *b) {
    return std::tie(a->origin, a->line) < std::tie(b->origin, b->line);
  });
  std::vector<std::string> notes;
  for (const Taken *next : ordered) {
    const Taken &entry = *next;
    const TorchtitanKey &key = *entry.key;
    if (entry.quiet || key.disposition == D::Ignored)
      continue;
    if (key.disposition == D::Refused)
      return error(entry.location + key.name + " = " + entry.text +
                   " is not supported (" + key.text + "); " + key.fix);
    notes.push_back(std::string(key.name) + " = " + entry.text + ": " +
                    key.text);
  }
  config.warnings.insert(config.warnings.end(), notes.begin(), notes.end());
  return llvm::Error::success();
}
