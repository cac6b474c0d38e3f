//===- PlanCache.h - device state kept per list of tensors ------*- C++ -*-===//
//
// The runtime calls that take a table of tensors (titanrt_fused_adamw,
// titanrt_squared_norm) build device state for the table: the table and its
// chunks on the GPU, scratch for partial sums. A compiled program passes
// the same tables every step (the memory plan fixes the places), so the
// state is built on the first call and found again after. A program has
// one table per titan.fused_adamw: one per rank usually, one per parameter
// with AdamW stepped in the backward (146 on the ~1B proxy), and all of
// them must stay: building a plan allocates device memory and evicting one
// frees it (cudaFree waits for the device).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_PLANCACHE_H
#define TITAN_RUNTIME_CUDA_PLANCACHE_H

#include "core/Status.h"

#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// The plans (device state) of the tables seen, the oldest first.
template <typename Plan> class PlanCache {
public:
  /// The most plans kept: a caller that changes its buffers every call (not
  /// a compiled program) keeps the latest ones.
  static constexpr size_t kMaxPlans = 4096;

  /// Sets `plan` to the plan for which `matches(const Plan &)` holds, or to
  /// the one `create(std::unique_ptr<Plan> &)` builds (failing as it
  /// fails), which evicts the oldest beyond kMaxPlans.
  template <typename Matches, typename Create>
  Status get(Matches matches, Create create, const Plan *&plan) {
    // A step makes its calls in the same order every step, so the plan a
    // call needs follows the previous call's: the search starts there.
    const size_t count = plans.size();
    for (size_t i = 0; i < count; ++i) {
      const size_t index = (next + i) % count;
      if (matches(*plans[index])) {
        plan = plans[index].get();
        next = index + 1;
        return Status::success();
      }
    }
    std::unique_ptr<Plan> created;
    TITANRT_RETURN_IF_ERROR(create(created));
    if (plans.size() == kMaxPlans)
      plans.erase(plans.begin());
    plans.push_back(std::move(created));
    plan = plans.back().get();
    next = plans.size();
    return Status::success();
  }

  /// The plans kept.
  size_t size() const { return plans.size(); }

private:
  std::vector<std::unique_ptr<Plan>> plans;
  /// Where the next search starts (modulo the plans): after the plan found
  /// or built last.
  size_t next = 0;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_PLANCACHE_H
