// Joins buffers of page-locked host memory, which the device reads in place over the host link,
// into one device buffer: a batch of many callers' requests uploaded without a host thread first
// copying them into one staging buffer. Word i (16 bytes) of the output comes from the part whose
// range of words holds it; every part is a whole number of words and starts on a word boundary.
#include "bc/common.cuh"

extern "C" __global__ void __launch_bounds__(256) gather_words(const uint4* const* __restrict__ parts, const uint64_t* __restrict__ ends, uint32_t count, uint4* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        // The first part whose end (in words) lies past i.
        uint32_t lo = 0, hi = count - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (ends[mid] > i) hi = mid; else lo = mid + 1;
        }
        out[i] = parts[lo][i - (lo ? ends[lo - 1] : 0)];
    }
}
