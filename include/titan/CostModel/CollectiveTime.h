//===- CollectiveTime.h - a collective's predicted time ---------*- C++ -*-===//
//
// The cost model's time of one collective of a partitioned step: the link its
// mesh axes run on and the alpha-beta time of its ring algorithm. Shared by
// the predicted step time and the overlap timeline.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COSTMODEL_COLLECTIVETIME_H
#define TITAN_COSTMODEL_COLLECTIVETIME_H

#include "titan/CostModel/Device.h"
#include "titan/Dialect/TitanDialect.h"

#include <string>

namespace mlir::titan {

/// The predicted time of one collective.
struct CollectiveTime {
  /// Its mesh axes joined by commas ("fsdp", "dp_shard,cp"): the
  /// communicator it runs on.
  std::string axes;
  /// The link it runs on (one of the device's), and whether that is the
  /// inter-node one.
  const LinkDescription *link = nullptr;
  bool internode = false;
  double seconds = 0;

  /// The axes as the report prints them: "[fsdp]".
  std::string getAxesKey() const { return "[" + axes + "]"; }
};

/// Predicts `collective`, an op of a rank's program over `mesh`, on
/// `device` with `ranksPerNode` ranks per node (0: one node).
CollectiveTime predictCollectiveTime(CollectiveOpInterface collective,
                                     MeshOp mesh,
                                     const DeviceDescription &device,
                                     int64_t ranksPerNode);

} // namespace mlir::titan

#endif // TITAN_COSTMODEL_COLLECTIVETIME_H
