// examples/device_plugin/src/target.cc — step 1: the target kind "toyacc".
//
// A target kind names a device and declares its options, each with a type and a
// range; `tilecore.Target("toyacc -stack=8")` then checks a target string against
// them, and an unknown option or a bad value is a ValueError naming it.
#include "tilecore/target/target.h"
#include "tilecore/ffi/reflection.h"
#include "toyacc.h"

// [toyacc.target.begin]
TILECORE_FFI_STATIC_INIT_BLOCK({
  using tilecore::ffi::Any;
  using tilecore::target::TargetOption;
  tilecore::target::RegisterTargetKind({
      .name = "toyacc",
      .device_type = toyacc::kDeviceType,
      .doc = "toyacc, a stack machine running bytecode (examples/device_plugin)",
      .options =
          {
              TargetOption{.name = "stack",
                           .type = "int",
                           .doc = "stack slots a kernel may use",
                           .default_value = Any(int64_t{16}),
                           .min = 2,
                           .max = 1024},
              TargetOption{.name = "device",
                           .type = "int",
                           .doc = "toyacc device the module runs on",
                           .default_value = Any(int64_t{0}),
                           .min = 0,
                           .max = toyacc::kNumDevices - 1},
          },
  });
});
// [toyacc.target.end]
