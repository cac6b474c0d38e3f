//===- RecomputeSolver.cpp - what to save, what to recompute --------------===//
//
// Builds the integer program of RecomputeSolver.h and solves it with CBC
// through its C interface.
//
//===----------------------------------------------------------------------===//

#include "RecomputeSolver.h"

#include "llvm/ADT/STLExtras.h"

#include <coin/Cbc_C_Interface.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include <dlfcn.h>

using namespace mlir::titan;

llvm::SmallVector<bool>
mlir::titan::getRecomputedOps(const RecomputeBlock &block,
                              llvm::ArrayRef<bool> kept) {
  llvm::SmallVector<bool> recomputed(block.ops.size(), false);
  llvm::SmallVector<unsigned> worklist;
  for (auto [index, value] : llvm::enumerate(block.values))
    if (value.readByBackward && !kept[index])
      worklist.push_back(index);
  while (!worklist.empty()) {
    unsigned def = block.values[worklist.pop_back_val()].def;
    if (recomputed[def])
      continue;
    recomputed[def] = true;
    for (unsigned operand : block.ops[def].operands)
      if (!kept[operand])
        worklist.push_back(operand);
  }
  return recomputed;
}

std::string
mlir::titan::stringifyRecomputeSolveStatus(RecomputeSolveStatus status) {
  switch (status) {
  case RecomputeSolveStatus::Optimal:
    return "optimal";
  case RecomputeSolveStatus::TimeLimit:
    return "time limit (best found)";
  case RecomputeSolveStatus::Fallback:
    return "fallback (full recomputation)";
  }
  return "";
}

namespace {
/// Units of the programs: seconds as microseconds; bytes as whole units
/// of at least a byte, at most a millionth of the largest value (sizes
/// rounded up, the budget down), so that the budget rows hold integers and
/// CBC's tolerances cannot let a choice exceed them.
constexpr double kMicroseconds = 1e6;
constexpr double kMaxUnitsPerValue = 1e6;
/// The objective's weight on a kept unit: a tie-break far below any op's
/// time (an op costs at least its overhead, about a microsecond).
constexpr double kTieBreakPerUnit = 1e-6 / kMaxUnitsPerValue;

struct CbcModelDeleter {
  void operator()(Cbc_Model *model) const { Cbc_deleteModel(model); }
};
using CbcModel = std::unique_ptr<Cbc_Model, CbcModelDeleter>;

/// A new silent minimization model.
CbcModel createModel() {
  CbcModel model(Cbc_newModel());
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setObjSense(model.get(), 1);
  return model;
}

/// One efficient choice for a block.
struct Choice {
  llvm::SmallVector<bool> kept;
  double bytes = 0, seconds = 0;
};

/// Makes the system BLAS single-threaded while alive, when it is OpenBLAS
/// (found at run time: the BLAS behind CBC's LAPACK is whatever the system
/// chose). CBC factorizes small dense matrices through LAPACK in every
/// solve; a threaded OpenBLAS wakes its pool for each and leaves the
/// threads spinning (sched_yield) between them, which doubled the CPU time
/// of a compile that solves, for no gain in wall time.
class SingleThreadedBlas {
public:
  SingleThreadedBlas()
      : getThreads(reinterpret_cast<int (*)()>(
            dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))),
        setThreads(reinterpret_cast<void (*)(int)>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    if (!getThreads || !setThreads)
      return;
    previousThreads = getThreads();
    setThreads(1);
  }
  ~SingleThreadedBlas() {
    if (getThreads && setThreads)
      setThreads(previousThreads);
  }
  SingleThreadedBlas(const SingleThreadedBlas &) = delete;
  SingleThreadedBlas &operator=(const SingleThreadedBlas &) = delete;

private:
  int (*getThreads)();
  void (*setThreads)(int);
  int previousThreads = 1;
};

/// The bytes and recompute seconds of keeping `kept` in `block`.
Choice evaluate(const RecomputeBlock &block, llvm::SmallVector<bool> kept) {
  Choice choice;
  for (auto [value, keep] : llvm::zip(block.values, kept))
    if (keep)
      choice.bytes += value.bytes;
  for (auto [op, again] : llvm::zip(block.ops, getRecomputedOps(block, kept)))
    if (again)
      choice.seconds += op.seconds;
  choice.kept = std::move(kept);
  return choice;
}

/// The least recomputation of `block` (its bytes in units) keeping at most
/// `bound` units (CBC, started from keeping nothing); none when CBC fails.
/// Sets `timedOut` when it stopped at the time limit.
std::optional<Choice> solveBlock(const RecomputeBlock &block, double bound,
                                 double timeLimitSeconds, bool &timedOut) {
  CbcModel model = createModel();
  int values = block.values.size();
  for (const RecomputeBlock::Value &value : block.values)
    Cbc_addCol(model.get(), "", 0, 1, kTieBreakPerUnit * value.bytes, 1, 0,
               nullptr, nullptr);
  for (const RecomputeBlock::Op &op : block.ops)
    Cbc_addCol(model.get(), "", 0, 1, op.seconds * kMicroseconds, 1, 0, nullptr,
               nullptr);
  auto addRow = [&](llvm::ArrayRef<int> cols, llvm::ArrayRef<double> coefs,
                    char sense, double rhs) {
    Cbc_addRow(model.get(), "", cols.size(), cols.data(), coefs.data(), sense,
               rhs);
  };
  llvm::SmallVector<int> budgetColumns;
  llvm::SmallVector<double> budgetCoefficients;
  for (auto [v, value] : llvm::enumerate(block.values)) {
    // The backward reads it: kept, or computed again.
    if (value.readByBackward)
      addRow({int(v), values + int(value.def)}, {1.0, 1.0}, 'G', 1.0);
    budgetColumns.push_back(v);
    budgetCoefficients.push_back(value.bytes);
  }
  // An op computed again needs each candidate operand kept or computed
  // again too.
  for (auto [o, op] : llvm::enumerate(block.ops))
    for (unsigned operand : op.operands)
      addRow({values + int(o), int(operand),
              values + int(block.values[operand].def)},
             {1.0, -1.0, -1.0}, 'L', 0.0);
  if (!budgetColumns.empty())
    addRow(budgetColumns, budgetCoefficients, 'L', bound);
  // Keeping nothing is always feasible.
  llvm::SmallVector<bool> none(block.values.size(), false);
  llvm::SmallVector<int> startColumns;
  llvm::SmallVector<double> startValues;
  for (unsigned v = 0; v < block.values.size(); ++v) {
    startColumns.push_back(v);
    startValues.push_back(0.0);
  }
  for (auto [o, again] : llvm::enumerate(getRecomputedOps(block, none))) {
    startColumns.push_back(values + int(o));
    startValues.push_back(again ? 1.0 : 0.0);
  }
  Cbc_setMIPStartI(model.get(), startColumns.size(), startColumns.data(),
                   startValues.data());
  Cbc_setMaximumSeconds(model.get(), timeLimitSeconds);
  // Small programs closed in tens of nodes: the standalone solver's
  // presolve, cuts and primal heuristics cost more than they save (the
  // heuristics ~40% of a llama3 block's 46 solves).
  Cbc_setParameter(model.get(), "preprocess", "off");
  Cbc_setParameter(model.get(), "cuts", "off");
  Cbc_setParameter(model.get(), "heuristicsOnOff", "off");
  Cbc_solve(model.get());
  if (Cbc_numberSavedSolutions(model.get()) == 0)
    return std::nullopt;
  timedOut |= !Cbc_isProvenOptimal(model.get());
  const double *solution = Cbc_getColSolution(model.get());
  llvm::SmallVector<bool> kept;
  for (unsigned v = 0; v < block.values.size(); ++v)
    kept.push_back(solution[v] > 0.5);
  Choice choice = evaluate(block, std::move(kept));
  if (choice.bytes > bound)
    return std::nullopt;
  return choice;
}

/// The efficient choices of `block`, most bytes first, ending with keeping
/// nothing: each the least recomputation within a bound that starts at
/// everything the backward reads and falls to just under the previous
/// choice's bytes, by at least 1/kMaxChoicesPerClass of the whole range
/// (the epsilon-constraint walk down the Pareto front, sampled so that it
/// reaches the bottom within kMaxChoicesPerClass solves).
std::vector<Choice> getEfficientChoices(const RecomputeBlock &block,
                                        double timeLimitSeconds,
                                        bool &timedOut) {
  std::vector<Choice> choices;
  double everything = 0;
  for (const RecomputeBlock::Value &value : block.values)
    if (value.readByBackward)
      everything += value.bytes;
  double bound = everything;
  double step = std::max(1.0, std::floor(everything / kMaxChoicesPerClass));
  while (choices.size() + 1 < kMaxChoicesPerClass && bound > 0) {
    std::optional<Choice> choice =
        solveBlock(block, bound, timeLimitSeconds, timedOut);
    if (!choice || choice->bytes <= 0)
      break;
    // Fewer bytes for no more seconds: the previous choice was not
    // efficient.
    if (!choices.empty() && choice->seconds <= choices.back().seconds)
      choices.back() = *choice;
    else
      choices.push_back(*choice);
    bound = std::min(choice->bytes - 1, bound - step);
  }
  Choice nothing =
      evaluate(block, llvm::SmallVector<bool>(block.values.size(), false));
  if (!choices.empty() && nothing.seconds <= choices.back().seconds)
    choices.back() = nothing;
  else
    choices.push_back(nothing);
  return choices;
}

/// A block class's efficient choices and whether a solve stopped at the
/// time limit.
struct EfficientChoices {
  std::vector<Choice> choices;
  bool timedOut = false;
};

/// The program of `block` (its bytes in units) and the time limit, as a
/// key: every field in a fixed order, the lists after their sizes.
std::string getBlockKey(const RecomputeBlock &block, double timeLimitSeconds) {
  std::string key;
  auto append = [&](const auto &field) {
    key.append(reinterpret_cast<const char *>(&field), sizeof(field));
  };
  append(timeLimitSeconds);
  append(block.values.size());
  for (const RecomputeBlock::Value &value : block.values) {
    append(value.bytes);
    append(value.readByBackward);
    append(value.def);
  }
  append(block.ops.size());
  for (const RecomputeBlock::Op &op : block.ops) {
    append(op.seconds);
    append(op.operands.size());
    for (unsigned operand : op.operands)
      append(operand);
  }
  return key;
}

/// getEfficientChoices, remembered for the process by the block's program:
/// only the knapsack over blocks depends on the budget, and titan-compile's
/// fit of `auto` to a memory budget (tools/titan-compile/FitRecompute.cpp)
/// solves the same step with up to seven budgets.
EfficientChoices getEfficientChoicesOnce(const RecomputeBlock &block,
                                         double timeLimitSeconds) {
  static std::mutex mutex;
  static std::map<std::string, EfficientChoices> solved;
  std::string key = getBlockKey(block, timeLimitSeconds);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = solved.find(key);
    if (found != solved.end())
      return found->second;
  }
  EfficientChoices result;
  result.choices =
      getEfficientChoices(block, timeLimitSeconds, result.timedOut);
  std::lock_guard<std::mutex> lock(mutex);
  return solved.emplace(std::move(key), std::move(result)).first->second;
}

/// Whether `a` and `b` are the same program (a class of blocks).
bool isSameBlock(const RecomputeBlock &a, const RecomputeBlock &b) {
  return a.values.size() == b.values.size() && a.ops.size() == b.ops.size() &&
         llvm::all_of(llvm::zip(a.values, b.values),
                      [](auto pair) {
                        auto &[x, y] = pair;
                        return x.bytes == y.bytes &&
                               x.readByBackward == y.readByBackward &&
                               x.def == y.def;
                      }) &&
         llvm::all_of(llvm::zip(a.ops, b.ops), [](auto pair) {
           auto &[x, y] = pair;
           return x.seconds == y.seconds && x.operands == y.operands;
         });
}
} // namespace

RecomputeSolution
mlir::titan::solveRecompute(llvm::ArrayRef<RecomputeBlock> blocks,
                            double keptBytesBudget, double timeLimitSeconds) {
  auto start = std::chrono::steady_clock::now();
  SingleThreadedBlas singleThreadedBlas;
  RecomputeSolution solution;
  solution.status = RecomputeSolveStatus::Optimal;
  double largest = 0;
  for (const RecomputeBlock &block : blocks)
    for (const RecomputeBlock::Value &value : block.values)
      largest = std::max(largest, value.bytes);
  double unit = std::max(1.0, largest / kMaxUnitsPerValue);
  std::vector<RecomputeBlock> scaled(blocks.begin(), blocks.end());
  for (RecomputeBlock &block : scaled)
    for (RecomputeBlock::Value &value : block.values)
      value.bytes = std::ceil(value.bytes / unit);
  double budget = std::floor(keptBytesBudget / unit);
  // Classes of identical blocks and their efficient choices.
  llvm::SmallVector<unsigned> classOf;
  llvm::SmallVector<unsigned> representative;
  std::vector<std::vector<Choice>> choices;
  bool timedOut = false;
  for (auto [index, block] : llvm::enumerate(scaled)) {
    auto same = llvm::find_if(representative, [&](unsigned other) {
      return isSameBlock(scaled[other], block);
    });
    if (same != representative.end()) {
      classOf.push_back(same - representative.begin());
      continue;
    }
    classOf.push_back(representative.size());
    representative.push_back(index);
    EfficientChoices efficient =
        getEfficientChoicesOnce(block, timeLimitSeconds);
    choices.push_back(std::move(efficient.choices));
    timedOut |= efficient.timedOut;
  }
  solution.blockClasses = representative.size();
  llvm::SmallVector<int64_t> classSize(representative.size(), 0);
  for (unsigned c : classOf)
    ++classSize[c];

  // How many blocks of each class take each choice: integer counts x(c, p)
  // with sum_p x(c, p) = size(c), sum bytes(c, p) x(c, p) <= budget,
  // minimizing sum seconds(c, p) x(c, p). Keeping nothing everywhere (the
  // last choice of each class) is the start.
  CbcModel model = createModel();
  llvm::SmallVector<int> firstColumn;
  int columns = 0;
  llvm::SmallVector<int> budgetColumns;
  llvm::SmallVector<double> budgetCoefficients, startValues;
  llvm::SmallVector<int> startColumns;
  for (auto [c, list] : llvm::enumerate(choices)) {
    firstColumn.push_back(columns);
    for (auto [p, choice] : llvm::enumerate(list)) {
      Cbc_addCol(model.get(), "", 0, double(classSize[c]),
                 choice.seconds * kMicroseconds +
                     kTieBreakPerUnit * choice.bytes,
                 1, 0, nullptr, nullptr);
      budgetColumns.push_back(columns);
      budgetCoefficients.push_back(choice.bytes);
      startColumns.push_back(columns);
      startValues.push_back(p + 1 == list.size() ? double(classSize[c]) : 0);
      ++columns;
    }
    solution.choices += list.size();
  }
  for (auto [c, list] : llvm::enumerate(choices)) {
    llvm::SmallVector<int> cols;
    for (unsigned p = 0; p < list.size(); ++p)
      cols.push_back(firstColumn[c] + p);
    llvm::SmallVector<double> ones(cols.size(), 1.0);
    Cbc_addRow(model.get(), "", cols.size(), cols.data(), ones.data(), 'E',
               double(classSize[c]));
  }
  std::vector<double> counts(columns, 0.0);
  for (auto [column, value] : llvm::zip(startColumns, startValues))
    counts[column] = value;
  if (columns > 0) {
    Cbc_addRow(model.get(), "", budgetColumns.size(), budgetColumns.data(),
               budgetCoefficients.data(), 'L', budget);
    Cbc_setMIPStartI(model.get(), startColumns.size(), startColumns.data(),
                     startValues.data());
    Cbc_setMaximumSeconds(model.get(), timeLimitSeconds);
    Cbc_solve(model.get());
    if (Cbc_numberSavedSolutions(model.get()) > 0) {
      const double *solved = Cbc_getColSolution(model.get());
      double bytes = 0;
      for (auto [c, list] : llvm::enumerate(choices))
        for (auto [p, choice] : llvm::enumerate(list))
          bytes += std::round(solved[firstColumn[c] + p]) * choice.bytes;
      if (bytes <= budget) {
        for (int column = 0; column < columns; ++column)
          counts[column] = std::round(solved[column]);
        timedOut |= !Cbc_isProvenOptimal(model.get());
      } else {
        solution.status = RecomputeSolveStatus::Fallback;
      }
    } else {
      solution.status = RecomputeSolveStatus::Fallback;
    }
  }
  if (solution.status == RecomputeSolveStatus::Optimal && timedOut)
    solution.status = RecomputeSolveStatus::TimeLimit;

  // Hand the choices out: the blocks of a class in order take the choices
  // with their counts, most bytes first.
  llvm::SmallVector<unsigned> nextChoice(choices.size(), 0);
  llvm::SmallVector<int64_t> leftOfChoice(choices.size(), 0);
  for (auto [c, list] : llvm::enumerate(choices))
    leftOfChoice[c] = int64_t(counts[firstColumn[c]]);
  for (auto [block, c] : llvm::zip(blocks, classOf)) {
    while (leftOfChoice[c] == 0 && nextChoice[c] + 1 < choices[c].size()) {
      ++nextChoice[c];
      leftOfChoice[c] = int64_t(counts[firstColumn[c] + nextChoice[c]]);
    }
    leftOfChoice[c] = std::max<int64_t>(leftOfChoice[c] - 1, 0);
    // In bytes again.
    Choice choice = evaluate(block, choices[c][nextChoice[c]].kept);
    solution.kept.push_back(choice.kept);
    solution.keptBytes += choice.bytes;
    solution.recomputeSeconds += choice.seconds;
  }
  solution.solveSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return solution;
}
