// Streams and events. Work runs synchronously when enqueued, so streams are
// always idle and events complete when recorded; a real adapter maps these
// to its runtime's queues and events.
#include <memory>
#include <new>

#include "template_adapter.hpp"

namespace template_adapter {

polychip_status stream_create(polychip_stream_create_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "stream_create: args is NULL");
  if (polychip_status s = check_device(args->device, "stream_create")) return s;
  // Forwarded cpu kernels need a cpu stream to run on.
  polychip_stream_create_args c{};
  c.struct_size = POLYCHIP_STRUCT_SIZE(polychip_stream_create_args, stream);
  if (polychip_status s = cpu_adapter()->stream_create(&c))
    return fail(s, std::string("stream_create: ") + cpu_adapter()->last_error_message());
  auto* stream = new (std::nothrow) Stream{args->device, c.stream};
  if (!stream) {
    polychip_stream_args d{POLYCHIP_STRUCT_SIZE(polychip_stream_args, stream), c.stream};
    cpu_adapter()->stream_destroy(&d);
    return fail(POLYCHIP_OUT_OF_MEMORY, "stream_create: cannot allocate a handle");
  }
  args->stream = reinterpret_cast<polychip_stream*>(stream);
  return POLYCHIP_OK;
}

polychip_status stream_destroy(polychip_stream_args* args) {
  if (!args || !args->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_destroy: args or stream is NULL");
  std::unique_ptr<Stream> stream(as_stream(args->stream));
  polychip_stream_args d{POLYCHIP_STRUCT_SIZE(polychip_stream_args, stream), stream->cpu_stream};
  if (polychip_status s = cpu_adapter()->stream_destroy(&d))
    return fail(s, std::string("stream_destroy: ") + cpu_adapter()->last_error_message());
  return POLYCHIP_OK;
}

polychip_status stream_synchronize(polychip_stream_args* args) {
  if (!args || !args->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_synchronize: args or stream is NULL");
  return POLYCHIP_OK;  // everything enqueued has already run
}

polychip_status event_create(polychip_event_create_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "event_create: args is NULL");
  if (polychip_status s = check_device(args->device, "event_create")) return s;
  auto* event = new (std::nothrow) Event{args->device, false, {}};
  if (!event) return fail(POLYCHIP_OUT_OF_MEMORY, "event_create: cannot allocate a handle");
  args->event = reinterpret_cast<polychip_event*>(event);
  return POLYCHIP_OK;
}

polychip_status event_destroy(polychip_event_args* args) {
  if (!args || !args->event)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_destroy: args or event is NULL");
  delete as_event(args->event);
  return POLYCHIP_OK;
}

polychip_status event_record(polychip_event_args* args) {
  if (!args || !args->event || !args->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_record: args, event or stream is NULL");
  Event* e = as_event(args->event);
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return POLYCHIP_OK;
}

polychip_status stream_wait_event(polychip_event_args* args) {
  if (!args || !args->event || !args->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_wait_event: args, event or stream is NULL");
  return POLYCHIP_OK;  // the event's work is already complete
}

polychip_status event_query(polychip_event_args* args) {
  if (!args || !args->event)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_query: args or event is NULL");
  args->complete = 1;
  return POLYCHIP_OK;
}

polychip_status event_synchronize(polychip_event_args* args) {
  if (!args || !args->event)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_synchronize: args or event is NULL");
  return POLYCHIP_OK;
}

polychip_status event_elapsed(polychip_event_elapsed_args* args) {
  if (!args || !args->start || !args->end)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_elapsed: start or end is NULL");
  const Event* start = as_event(args->start);
  const Event* end = as_event(args->end);
  if (!start->recorded || !end->recorded)
    return fail(POLYCHIP_FAILED_PRECONDITION, "event_elapsed: an event was never recorded");
  args->milliseconds = std::chrono::duration<double, std::milli>(end->when - start->when).count();
  return POLYCHIP_OK;
}

}  // namespace template_adapter
