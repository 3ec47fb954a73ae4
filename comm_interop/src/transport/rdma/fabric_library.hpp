// libfabric, opened on first use rather than linked. Loading it runs the
// constructors of the provider libraries it links (libpsm2 and libinfinipath
// each time the CPU clock for ~0.1 s), which every polychip process paid at
// start-up although only RDMA lanes use libfabric; and a host without it
// still runs everything else.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace polychip::comm {

// libfabric's exported entry points this project calls; the rest of its API
// is inline calls through the objects these return.
struct FabricLibrary {
  decltype(&::fi_getinfo) getinfo;
  decltype(&::fi_freeinfo) freeinfo;
  decltype(&::fi_dupinfo) dupinfo;
  decltype(&::fi_fabric) fabric;
  decltype(&::fi_strerror) strerror;
};

// Loaded once per process (thread-safe). Throws UNAVAILABLE naming the library,
// why it did not load and what to install when it cannot be used.
const FabricLibrary& fabric_library();

}  // namespace polychip::comm
