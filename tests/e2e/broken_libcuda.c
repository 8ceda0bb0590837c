/* Stands for an installed NVIDIA driver that does not work: a libcuda.so.1 without the driver's
   entry points (no cuGetProcAddress_v2). */
int tally_broken_libcuda_marker = 1;
