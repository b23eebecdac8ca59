# The Debian package of gpuscale (cpack -G DEB in the build directory):
# what `cmake --install` installs, under /usr, with its run-time
# dependencies. The binary links only Debian's libraries (the CUDA runtime
# is linked in statically); NVIDIA's libraries are opened at run time by
# the parts that need them, so they are suggested, each with what it is
# for, and the package installs and runs its CPU backend without them
# (scripts/check-install proves it with /usr/local hidden).
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
# Debian libraries below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(gs_deb_depends "libcjson1")
if(MPI_C_FOUND)
  string(APPEND gs_deb_depends ", libopenmpi3")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${gs_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, openmpi-bin")
# The NVIDIA parts by their package names: the driver in Debian's non-free,
# NCCL, cuBLAS and CUPTI in NVIDIA's CUDA repository (for the toolkit's
# major-minor version this was built with); Slurm's client from Debian.
set(gs_cuda_mm "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "nvidia-driver, libnccl2, libcublas-${gs_cuda_mm}, cuda-cupti-${gs_cuda_mm}, slurm-client")
# The extended description; CPack puts the summary above it and indents it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"gpuscale runs real workloads on 1..N GPUs (or CPU ranks), keeps every raw
measurement with its environment in one result file, and reports speedup,
parallel efficiency and why a step is not N times faster.
.
Without any NVIDIA software it runs its CPU backend, report, compare,
predict and ingest. Each NVIDIA part is opened at run time by what needs
it, found by the dynamic linker (an /etc/ld.so.conf.d entry or
LD_LIBRARY_PATH): the NVIDIA driver (libcuda.so.1; NVML, libnvidia-ml.so.1,
for telemetry) for GPU runs; NCCL (libnccl.so.2) for collectives between
GPUs; cuBLAS (libcublas.so.${CUDAToolkit_VERSION_MAJOR}, libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}) for mlp and llm; CUPTI
(libcupti.so.${CUDAToolkit_VERSION_MAJOR}) for --trace. They come with the CUDA toolkit ${CUDAToolkit_VERSION_MAJOR}.x or
NVIDIA's repository. The CUDA runtime is linked in. gnuplot draws the
report's plots; Open MPI's mpirun (openmpi-bin) or Slurm's srun
(slurm-client, with --mpi=pmix) starts multi-process runs.")
include(CPack)
