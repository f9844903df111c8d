# `cmake --install` and `cpack -G DEB`: a relocatable tree — bin/infrabench, lib/infrabench/
# (the backend modules), share/infrabench/{suites,baselines}, share/doc/infrabench — and a Debian
# package of it whose Depends are what the core executable links and whose Recommends are the
# libraries under the modules that were built (a node without them skips those benchmarks with
# the loader's reason).
# The suites are compiled in (found by name without these); the copies are to read and adapt.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/suites/ DESTINATION share/infrabench/suites
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/baselines/ DESTINATION share/infrabench/baselines
        FILES_MATCHING PATTERN "*.json")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/infrabench)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/infrabench/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "*.png")

set(CPACK_PACKAGE_NAME infrabench)
set(CPACK_PACKAGE_VENDOR "infrabench")
set(CPACK_PACKAGE_CONTACT "infrabench developers <infrabench-dev@localhost>")
# The synopsis within lintian's 80 columns, and the extended description it wants under it.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "hardware benchmarks for ML training nodes: storage, CPU, PCIe, GPU, network")
set(CPACK_PACKAGE_DESCRIPTION
    "infrabench measures each hop a training job's data takes, on a node and
between nodes: storage, CPU preprocessing, host memory, PCIe, GPU compute and
memory, collectives. It checks the results against a baseline to accept a node
or drain it. The GPU (CUDA, NCCL) and MPI benchmarks are modules loaded at run
time: a node without their libraries lists them as skipped, with the reason.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # infrabench_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/infrabench")

# What Debian wants of every package's doc directory: the licence terms in the machine-readable
# format (cmake/debian/copyright: the tree states no licence yet, so that file says so) and a
# changelog whose version is this build's. The package is native (its version has no Debian
# revision: infrabench_0.1.0_amd64.deb), so policy 12.7 names it changelog.gz, not
# changelog.Debian.gz (lintian: wrong-name-for-changelog-of-native-package). Its date is the
# configure's, or SOURCE_DATE_EPOCH's (string(TIMESTAMP) reads it) for a reproducible package;
# gzip -9n, as lintian wants (no name or timestamp in the header).
string(TIMESTAMP _ib_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(_ib_debian_dir ${CMAKE_BINARY_DIR}/debian)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${_ib_debian_dir}/changelog @ONLY)
execute_process(COMMAND gzip -9 -n -c ${_ib_debian_dir}/changelog
                OUTPUT_FILE ${_ib_debian_dir}/changelog.gz RESULT_VARIABLE _ib_gzip_rc)
if(NOT _ib_gzip_rc EQUAL 0)
  message(FATAL_ERROR "gzip of ${_ib_debian_dir}/changelog failed (${_ib_gzip_rc})")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${_ib_debian_dir}/changelog.gz
        DESTINATION share/doc/infrabench)

# Depends: the libraries the core executable links (ldd build/infrabench), by Debian 12 package.
set(_ib_depends "libc6, libstdc++6, libgcc-s1, libhwloc15, libsqlite3-0, libturbojpeg0, libudev1")
if(INFRABENCH_WITH_IO_URING)
  string(APPEND _ib_depends ", liburing2")
endif()
# CUDA and NCCL are modules (libinfrabench_cuda.so, libinfrabench_nccl.so) that depend on nothing
# from Debian: the CUDA toolkit is not a Debian package, and a node without it skips the GPU
# benchmarks with the loader's reason. MPI is a module too (libinfrabench_mpi.so): Recommends below.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_ib_depends}")

# Recommends: the libraries under the modules that were built.
set(_ib_recommends "")
if(INFRABENCH_WITH_OPENBLAS)
  list(APPEND _ib_recommends "libopenblas0-pthread | libopenblas0")
endif()
if(INFRABENCH_WITH_ONEDNN)
  list(APPEND _ib_recommends "libdnnl2")
endif()
if(INFRABENCH_WITH_OPENCV)
  list(APPEND _ib_recommends "libopencv-imgproc406")
endif()
if(INFRABENCH_WITH_MPI)
  list(APPEND _ib_recommends "libopenmpi3")
endif()
list(JOIN _ib_recommends ", " _ib_recommends)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${_ib_recommends}")
# Suggests: what the multi-node and GPU runs use from outside the package.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, fio")
set(CPACK_GENERATOR DEB)
include(CPack)
