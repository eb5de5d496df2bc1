// include/tilecore/sim/sim_ffi.h — the simulator as an FFI object, and SimError at the FFI.
//
// `sim.Simulator` objects are what Python's tilecore.sim.Simulator and the runtime's
// npu device hold. A sim::SimError crossing the FFI becomes an error of kind
// "SimError" whose message is SimError::what() ("core C, pc P, line L (`inst`):
// reason"); the structured fields of the most recent one raised on this thread are
// kept for `sim.LastFault` (Python's tilecore.sim.SimError reads them).
#pragma once

#include <mutex>
#include <utility>

#include "tilecore/ffi/error.h"
#include "tilecore/sim/simulator.h"

namespace tilecore::sim {

/// Records `e` for sim.LastFault and throws it as an ffi::Error of kind "SimError".
[[noreturn]] void ThrowAsFFIError(const SimError& e);

/// Runs `f`, turning a SimError into an ffi::Error of kind "SimError".
template <typename F>
decltype(auto) TranslateSimError(F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const SimError& e) {
    ThrowAsFFIError(e);
  }
}

/// A Simulator behind an FFI handle. `mu` serialises calls on one simulator (a run
/// releases the GIL, so two Python threads could otherwise enter it together).
class SimulatorObj : public ffi::Object {
 public:
  explicit SimulatorObj(SimConfig config) : sim(std::move(config)) {}
  Simulator sim;
  std::mutex mu;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("sim.Simulator", SimulatorObj, ffi::Object);
};

class SimulatorRef : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(SimulatorRef, ffi::ObjectRef, SimulatorObj);
  SimulatorObj* mut() const { return const_cast<SimulatorObj*>(get()); }
};

}  // namespace tilecore::sim
