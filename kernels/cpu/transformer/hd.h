// Marks code that is compiled for the host and, under nvcc, for the GPU too: the transformer's
// per-element and per-row arithmetic is written once (ops.h), so the CPU reference that the unit
// tests check and the CUDA kernels run the same formulas. In a host-only build the macro is empty.
#pragma once

#if defined(__CUDACC__)
#define IB_HD __host__ __device__
#define IB_HD_INLINE __host__ __device__ __forceinline__
#else
#define IB_HD
#define IB_HD_INLINE inline
#endif
