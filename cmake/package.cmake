# The Debian package of gpuscale (cpack -G DEB in the build directory):
# what `cmake --install` installs, under /usr, with its run-time
# dependencies. Debian packages are declared; the CUDA libraries the
# binary links (NCCL, cuBLAS) come with NVIDIA's CUDA toolkit, which Debian
# does not package in these versions, so they are stated, not declared.
set(CPACK_PACKAGE_NAME gpuscale)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gpuscale maintainers <gpuscale@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "measures how well GPU work scales across GPUs and nodes, and why not better")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# dpkg-shlibdeps adds libc6, libstdc++6, libgcc-s1 and the versions of the
# Debian libraries below; libraries of no package (NCCL, cuBLAS) are skipped.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(gs_deb_depends "libcjson1")
if(MPI_C_FOUND)
  string(APPEND gs_deb_depends ", libopenmpi3")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${gs_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, openmpi-bin")
# The extended description; CPack puts the summary above it and indents it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"gpuscale runs real workloads on 1..N GPUs (or CPU ranks), keeps every raw
measurement with its environment in one result file, and reports speedup,
parallel efficiency and why a step is not N times faster.
.
From the CUDA toolkit ${CUDAToolkit_VERSION_MAJOR}.x (not declared: Debian does not package it):
libnccl.so.2, libcublas.so.${CUDAToolkit_VERSION_MAJOR} and libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}, found by the
dynamic linker (the toolkit's /etc/ld.so.conf.d entry or LD_LIBRARY_PATH).
The CUDA runtime is linked in. The NVIDIA driver is needed only for GPU
runs; NVML is loaded from it at run time. Without a GPU the CPU backend
runs. gnuplot draws the report's plots; Open MPI's mpirun (openmpi-bin)
or Slurm's srun starts multi-process runs.")
include(CPack)
