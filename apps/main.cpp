#include <cstdio>
#include <string_view>

#include "infrabench/backend_loader.h"
#include "infrabench/cli.h"
#include "infrabench/process_streams.h"

int main(int argc, char** argv) {
  infrabench::prepare_process_streams();
  // A scheduler's health check answers with its one line whatever happens: a signal during
  // start-up (loading the modules takes a few hundred ms on a busy node) is caught too.
  if (argc > 1 && std::string_view(argv[1]) == "health-check") infrabench::catch_stop_signals();
  // The modules that hold benchmarks (MPI) register them before the command line is read, or
  // stand-ins that say why they cannot run.
  infrabench::backends::load_benchmark_modules();
  // The build's own use (apps/CMakeLists.txt): `infrabench --write-module-manifest ID FILE`
  // lists the benchmarks module ID registered, for a node where it will not load.
  if (argc == 4 && std::string_view(argv[1]) == "--write-module-manifest") {
    if (infrabench::backends::write_module_manifest(argv[2], argv[3])) return 0;
    // A module that does not load here, where it was built, is a build error (a symbol the
    // executable does not export, ...): say why.
    std::fprintf(stderr, "infrabench: error: cannot write %s: %s\n", argv[3],
                 infrabench::backends::load(argv[2]).reason.text.c_str());
    return 1;
  }
  // Every command's output on stdout is checked here, once: a command whose output did not arrive
  // (a full disk under `> file`, /dev/full, a closed descriptor) must not exit 0.
  return infrabench::finish_standard_output(infrabench::cli_main(argc, argv));
}
