//===- PlanCache.h - device state kept per list of tensors ------*- C++ -*-===//
//
// The runtime calls that take a table of tensors (titanrt_fused_adamw,
// titanrt_squared_norm) build device state for the table: the table and its
// chunks on the GPU, scratch for partial sums. A compiled program passes
// the same tables every step (the memory plan fixes the places), so the
// state is built on the first call and found again after.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_PLANCACHE_H
#define TITAN_RUNTIME_CUDA_PLANCACHE_H

#include "core/Status.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// The plans (device state) of the tables seen, the most recent last.
template <typename Plan> class PlanCache {
public:
  /// The most plans kept: a caller that changes its buffers every call (not
  /// a compiled program) keeps the latest ones.
  static constexpr size_t kMaxPlans = 8;

  /// Sets `plan` to the plan for which `matches(const Plan &)` holds, or to
  /// the one `create(std::unique_ptr<Plan> &)` builds (failing as it
  /// fails).
  template <typename Matches, typename Create>
  Status get(Matches matches, Create create, const Plan *&plan) {
    auto known = std::find_if(plans.begin(), plans.end(),
                              [&](const std::unique_ptr<Plan> &candidate) {
                                return matches(*candidate);
                              });
    if (known == plans.end()) {
      std::unique_ptr<Plan> created;
      TITANRT_RETURN_IF_ERROR(create(created));
      if (plans.size() == kMaxPlans)
        plans.erase(plans.begin());
      plans.push_back(std::move(created));
      known = std::prev(plans.end());
    }
    plan = known->get();
    return Status::success();
  }

  /// The plans kept.
  size_t size() const { return plans.size(); }

private:
  std::vector<std::unique_ptr<Plan>> plans;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_PLANCACHE_H
