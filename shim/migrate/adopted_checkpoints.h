#pragma once
// dockershim's checkpoints of the pods it adopted from cri-dockerd (sandbox_adoption.cc,
// "adopted_from": "cri-dockerd"): cri-dockerd's own checkpoint of the pod plus its IPs,
// which libcni's cache keeps as well. Switching back, cri-dockerd owns those pods again
// and removes only its own file with a pod, so ours would outlive the pods: the switch
// removes them, and a later switch adopts the pods again.
#include <string>
#include <vector>

namespace shim::migrate {

// The paths of such checkpoints in `dockershim_root`/sandbox whose cri-dockerd
// checkpoint (`cri_dockerd_root`/sandbox/<id>) is there. None when both roots are one
// directory (dockershim then keeps adopted IPs in memory, never in a file).
std::vector<std::string> AdoptedCheckpoints(const std::string& dockershim_root, const std::string& cri_dockerd_root);

}  // namespace shim::migrate
