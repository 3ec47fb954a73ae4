// CRC32C (Castagnoli): guards every wire header, and payloads when
// POLYCHIP_COMM_CHECKSUM=1. Uses the SSE4.2 instruction when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polychip::comm {

// Continues `crc` (start with 0) over `size` bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }

}  // namespace polychip::comm
