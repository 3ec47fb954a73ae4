// The C ABI over Communicator: exceptions become status codes plus a
// thread-local message.
#include <cstring>
#include <string>

#include "polychip/comm/comm.h"
#include "polychip/comm/communicator.hpp"
#include "polychip/error.hpp"

struct polychip_comm {
  std::unique_ptr<polychip::comm::Communicator> impl;
};

namespace {

thread_local std::string last_error;

template <typename F>
polychip_status guarded(F&& f) {
  try {
    f();
    last_error.clear();
    return POLYCHIP_OK;
  } catch (const polychip::Error& e) {
    last_error = e.what();
    return static_cast<polychip_status>(e.code());
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
    return POLYCHIP_INTERNAL;
  }
}

polychip::comm::Communicator& get(polychip_comm* c) {
  if (!c || !c->impl) polychip::throw_error(polychip::StatusCode::kInvalidArgument, "comm is NULL");
  return *c->impl;
}

polychip::DType dtype_of(int32_t code) {
  if (!polychip::is_valid_dtype(code)) {
    polychip::throw_error(polychip::StatusCode::kInvalidArgument,
                          "dtype code " + std::to_string(code) + " is not a polychip dtype");
  }
  return static_cast<polychip::DType>(code);
}

polychip::comm::ReduceOp op_of(int32_t op) {
  if (op < 0 || op > 4) {
    polychip::throw_error(polychip::StatusCode::kInvalidArgument,
                          "op code " + std::to_string(op) + " is not a polychip_comm_op");
  }
  return static_cast<polychip::comm::ReduceOp>(op);
}

// The caller's out-parameter `name`: refused by name when NULL, not written through.
int& out(int* p, const char* name) {
  if (!p)
    polychip::throw_error(polychip::StatusCode::kInvalidArgument, std::string(name) + " is NULL");
  return *p;
}

}  // namespace

extern "C" {

const char* polychip_comm_last_error(void) { return last_error.c_str(); }

polychip_status polychip_comm_get_unique_id(polychip_comm_unique_id* id) {
  return guarded([&] {
    if (!id) polychip::throw_error(polychip::StatusCode::kInvalidArgument, "id is NULL");
    auto u = polychip::comm::Communicator::create_unique_id();
    std::memcpy(id->bytes, u.bytes.data(), 128);
  });
}

polychip_status polychip_comm_init_rank(polychip_comm** comm, const polychip_comm_unique_id* id,
                                        int rank, int world) {
  return guarded([&] {
    if (!comm || !id)
      polychip::throw_error(polychip::StatusCode::kInvalidArgument, "comm or id is NULL");
    polychip::comm::UniqueId u;
    std::memcpy(u.bytes.data(), id->bytes, 128);
    auto c = std::make_unique<polychip_comm>();
    c->impl = std::make_unique<polychip::comm::Communicator>(u, rank, world);
    *comm = c.release();
  });
}

polychip_status polychip_comm_init_from_environment(polychip_comm** comm) {
  return guarded([&] {
    if (!comm) polychip::throw_error(polychip::StatusCode::kInvalidArgument, "comm is NULL");
    auto c = std::make_unique<polychip_comm>();
    c->impl = polychip::comm::Communicator::from_environment();
    *comm = c.release();
  });
}

polychip_status polychip_comm_destroy(polychip_comm* comm) {
  return guarded([&] { delete comm; });
}

polychip_status polychip_comm_abort(polychip_comm* comm, const char* reason) {
  return guarded([&] { get(comm).abort(reason ? reason : "abort requested"); });
}

polychip_status polychip_comm_rank(const polychip_comm* comm, int* rank) {
  return guarded([&] { out(rank, "rank") = get(const_cast<polychip_comm*>(comm)).rank(); });
}

polychip_status polychip_comm_size(const polychip_comm* comm, int* size) {
  return guarded([&] { out(size, "size") = get(const_cast<polychip_comm*>(comm)).size(); });
}

polychip_status polychip_comm_all_reduce(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t count, int32_t dtype, int32_t op) {
  return guarded([&] { get(comm).all_reduce(send, recv, count, dtype_of(dtype), op_of(op)); });
}

polychip_status polychip_comm_all_gather(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t send_count, int32_t dtype) {
  return guarded([&] { get(comm).all_gather(send, recv, send_count, dtype_of(dtype)); });
}

polychip_status polychip_comm_reduce_scatter(polychip_comm* comm, const void* send, void* recv,
                                             uint64_t recv_count, int32_t dtype, int32_t op) {
  return guarded(
      [&] { get(comm).reduce_scatter(send, recv, recv_count, dtype_of(dtype), op_of(op)); });
}

polychip_status polychip_comm_broadcast(polychip_comm* comm, const void* send, void* recv,
                                        uint64_t count, int32_t dtype, int root) {
  return guarded([&] { get(comm).broadcast(send, recv, count, dtype_of(dtype), root); });
}

polychip_status polychip_comm_reduce(polychip_comm* comm, const void* send, void* recv,
                                     uint64_t count, int32_t dtype, int32_t op, int root) {
  return guarded([&] { get(comm).reduce(send, recv, count, dtype_of(dtype), op_of(op), root); });
}

polychip_status polychip_comm_all_to_all(polychip_comm* comm, const void* send, void* recv,
                                         uint64_t count, int32_t dtype) {
  return guarded([&] { get(comm).all_to_all(send, recv, count, dtype_of(dtype)); });
}

polychip_status polychip_comm_send(polychip_comm* comm, const void* data, uint64_t count,
                                   int32_t dtype, int peer) {
  return guarded([&] { get(comm).send(data, count, dtype_of(dtype), peer); });
}

polychip_status polychip_comm_recv(polychip_comm* comm, void* data, uint64_t count, int32_t dtype,
                                   int peer) {
  return guarded([&] { get(comm).recv(data, count, dtype_of(dtype), peer); });
}

polychip_status polychip_comm_group_start(polychip_comm* comm) {
  return guarded([&] { get(comm).group_start(); });
}

polychip_status polychip_comm_group_end(polychip_comm* comm) {
  return guarded([&] { get(comm).group_end(); });
}

polychip_status polychip_comm_last_call(const polychip_comm* comm, char* text, size_t size) {
  return guarded([&] {
    if (!text && size > 0) {
      polychip::throw_error(polychip::StatusCode::kInvalidArgument,
                            "text is NULL but size is " + std::to_string(size));
    }
    const auto& rec = get(const_cast<polychip_comm*>(comm)).last_call();
    std::string s = std::string(polychip::comm::algorithm_name(rec.algorithm)) + "/" +
                    std::string(polychip::comm::data_path_name(rec.path)) + "/" + rec.transport;
    if (size > 0) {
      std::strncpy(text, s.c_str(), size - 1);
      text[size - 1] = '\0';
    }
  });
}

}  // extern "C"
