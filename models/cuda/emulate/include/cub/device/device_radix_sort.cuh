/*
 * cub/device/device_radix_sort.cuh (emulation) - CUB's SortPairs with its
 * two-call protocol (a NULL temporary buffer asks for its size) as a stable
 * host sort on the bits [begin_bit, end_bit) of the keys. Checks that the
 * buffers lie inside allocations and that the temporary storage is large
 * enough. Test builds with -Demulate_cuda=true only.
 */
#ifndef TUNEP_EMU_CUB_RADIX_SORT_CUH
#define TUNEP_EMU_CUB_RADIX_SORT_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <stddef.h>
#include <vector>

namespace cub
{

struct DeviceRadixSort {
    template <class K, class V>
    static cudaError_t SortPairs(void *temp, size_t &temp_bytes, const K *keys_in, K *keys_out,
                                 const V *vals_in, V *vals_out, int n, int begin_bit = 0,
                                 int end_bit = (int)sizeof(K) * 8, cudaStream_t stream = 0)
    {
        /* what real CUB needs, roughly: a second copy of keys and values */
        size_t need = (size_t)(n > 0 ? n : 0) * (sizeof(K) + sizeof(V)) + 256;
        if (!temp) {
            temp_bytes = need;
            return cudaSuccess;
        }
        if (n < 0 || begin_bit < 0 || end_bit > (int)sizeof(K) * 8 || begin_bit >= end_bit ||
            !tunep_emu_stream_ok(stream)) {
            tunep_emu_report(__FILE__, __LINE__, "SortPairs: invalid argument");
            return cudaErrorInvalidValue;
        }
        if (temp_bytes < need || !tunep_emu_in_allocation(temp, temp_bytes)) {
            tunep_emu_report(__FILE__, __LINE__,
                             "SortPairs: temporary storage of %zu bytes too small or outside an "
                             "allocation",
                             temp_bytes);
            return cudaErrorInvalidValue;
        }
        size_t kb = (size_t)n * sizeof(K), vb = (size_t)n * sizeof(V);
        if (n > 0 &&
            (!tunep_emu_in_allocation(keys_in, kb) || !tunep_emu_in_allocation(keys_out, kb) ||
             !tunep_emu_in_allocation(vals_in, vb) || !tunep_emu_in_allocation(vals_out, vb))) {
            tunep_emu_report(__FILE__, __LINE__,
                             "SortPairs: a key or value array of %d items lies outside an "
                             "allocation",
                             n);
            return cudaErrorInvalidValue;
        }
        unsigned long long bits = 0;
        for (int b = begin_bit; b < end_bit; b++)
            bits |= 1ull << b;
        std::vector<int> order((size_t)n);
        for (int i = 0; i < n; i++)
            order[(size_t)i] = i;
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            return ((unsigned long long)keys_in[a] & bits) <
                   ((unsigned long long)keys_in[b] & bits);
        });
        std::vector<K> k((size_t)n);
        std::vector<V> v((size_t)n);
        for (int i = 0; i < n; i++) {
            k[(size_t)i] = keys_in[order[(size_t)i]];
            v[(size_t)i] = vals_in[order[(size_t)i]];
        }
        std::copy(k.begin(), k.end(), keys_out);
        std::copy(v.begin(), v.end(), vals_out);
        return cudaSuccess;
    }
};

} // namespace cub

#endif /* TUNEP_EMU_CUB_RADIX_SORT_CUH */
