/* C ABI of polychip's collectives, for frameworks (NCCL-shaped). Every
 * function returns a polychip_status (POLYCHIP_OK == 0); on failure
 * polychip_comm_last_error() gives the message (thread-local). Buffers are
 * host pointers. dtype and op codes are POLYCHIP_DTYPE_* and
 * polychip_comm_op. */
#ifndef POLYCHIP_COMM_H_
#define POLYCHIP_COMM_H_

#include <stddef.h>
#include <stdint.h>

#include "polychip/adapter_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct polychip_comm polychip_comm;
typedef struct polychip_comm_unique_id {
  uint8_t bytes[128];
} polychip_comm_unique_id;

typedef enum polychip_comm_op {
  POLYCHIP_COMM_SUM = 0,
  POLYCHIP_COMM_PROD = 1,
  POLYCHIP_COMM_MIN = 2,
  POLYCHIP_COMM_MAX = 3,
  POLYCHIP_COMM_AVG = 4
} polychip_comm_op;

const char* polychip_comm_last_error(void);

polychip_status polychip_comm_get_unique_id(polychip_comm_unique_id* id);
polychip_status polychip_comm_init_rank(polychip_comm** comm, const polychip_comm_unique_id* id,
                                        int rank, int world);
/* Ranks from mpirun / srun / torchrun variables (see docs/comm.md). */
polychip_status polychip_comm_init_from_environment(polychip_comm** comm);
polychip_status polychip_comm_destroy(polychip_comm* comm);
polychip_status polychip_comm_abort(polychip_comm* comm, const char* reason);
polychip_status polychip_comm_rank(const polychip_comm* comm, int* rank);
polychip_status polychip_comm_size(const polychip_comm* comm, int* size);

polychip_status polychip_comm_all_reduce(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t count, int32_t dtype, int32_t op);
polychip_status polychip_comm_all_gather(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t send_count, int32_t dtype);
polychip_status polychip_comm_reduce_scatter(polychip_comm* comm, const void* send, void* recv,
                                             uint64_t recv_count, int32_t dtype, int32_t op);
polychip_status polychip_comm_broadcast(polychip_comm* comm, const void* send, void* recv,
                                        uint64_t count, int32_t dtype, int root);
polychip_status polychip_comm_reduce(polychip_comm* comm, const void* send, void* recv,
                                     uint64_t count, int32_t dtype, int32_t op, int root);
polychip_status polychip_comm_all_to_all(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t count, int32_t dtype);
polychip_status polychip_comm_send(polychip_comm* comm, const void* data, uint64_t count,
                                   int32_t dtype, int peer);
polychip_status polychip_comm_recv(polychip_comm* comm, void* data, uint64_t count, int32_t dtype,
                                   int peer);
polychip_status polychip_comm_group_start(polychip_comm* comm);
polychip_status polychip_comm_group_end(polychip_comm* comm);

/* What the last call did: "ring/host/tcp" (algorithm/path/transport).
 * Writes at most `size` bytes including the terminating NUL; `text` may be
 * NULL only with `size` 0. */
polychip_status polychip_comm_last_call(const polychip_comm* comm, char* text, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* POLYCHIP_COMM_H_ */
