//===- CollectiveTime.cpp - a collective's predicted time -----------------===//

#include "titan/CostModel/CollectiveTime.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::titan;

CollectiveTime
mlir::titan::predictCollectiveTime(CollectiveOpInterface collective,
                                   MeshOp mesh, const DeviceDescription &device,
                                   int64_t ranksPerNode) {
  ArrayAttr meshAxes = mesh.getAxisNames();
  SmallVector<unsigned> axes;
  CollectiveTime time;
  for (StringAttr axis :
       collective->getAttrOfType<ArrayAttr>("axes").getAsRange<StringAttr>()) {
    time.axes += (time.axes.empty() ? "" : ",") + axis.getValue().str();
    axes.push_back(llvm::find(meshAxes, Attribute(axis)) - meshAxes.begin());
  }
  time.link = &getAxesLink(device, mesh.getAxisSizes(), axes, ranksPerNode);
  time.internode = time.link == &device.interNode;
  time.seconds = predictCollectiveSeconds(
      *time.link, collective.getCollectiveKind(), collective.getGroupSize(),
      collective.getBytesSentPerRank());
  return time;
}
