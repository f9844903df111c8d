# training/*: the whole data path of a training step at once (read -> decode + transform -> GEMM
# forward/backward -> gradient all-reduce -> update), built from the kernels the per-hop
# benchmarks measure. The all-reduce goes through the communicator: MPI when compiled in and
# launched by mpirun/srun, nothing to do in a single process.
target_sources(infrabench_benchmarks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/step.cpp)
