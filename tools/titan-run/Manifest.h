//===- Manifest.h - the manifest of a titan-compile output ------*- C++ -*-===//
//
// titan-compile writes manifest.json next to the rank executables it
// builds: the world size, the device mesh, the programs, and which program
// each rank runs at which mesh coordinates:
//
//   {"format": "titan-manifest", "version": 1, "world_size": 4,
//    "mesh": {"axes": ["dp_replicate", "fsdp", "cp", "tp"],
//             "sizes": [1, 2, 1, 2]},
//    "programs": [{"name": "train", "path": "bin/train"}],
//    "ranks": [{"rank": 0, "program": "train", "coords": [0, 0, 0, 0]}, ...]}
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_RUN_MANIFEST_H
#define TITAN_TOOLS_TITAN_RUN_MANIFEST_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::run {

/// What titan-run needs of a validated manifest.json.
struct Manifest {
  int64_t worldSize = 0;
  /// Where the ranks compute: "cpu", or "cuda" (one GPU per rank;
  /// titan-compile --backend=cuda). Manifests before backends say none:
  /// "cpu".
  std::string backend = "cpu";
  /// The executable each rank runs (an existing executable file), by rank.
  std::vector<std::string> rankPrograms;
};

/// Reads `directory`/manifest.json and checks it: the format and version,
/// every field present with its type, the mesh's size equal to the world
/// size, one entry per rank at the coordinates row-major order gives it,
/// every program named once and an executable file in `directory`.
llvm::Expected<Manifest> readManifest(llvm::StringRef directory);

} // namespace titan::run

#endif // TITAN_TOOLS_TITAN_RUN_MANIFEST_H
