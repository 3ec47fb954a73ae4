// A job larger than the open-file limit allows: said at once, by name,
// instead of EMFILE half-way through set-up spinning until the timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "bootstrap/store.hpp"
#include "polychip/error.hpp"
#include "transport/open_file_limit.hpp"
#include "transport/tcp/socket.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

// The message of the Error `call` threw, or "no error".
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return status_code_name(static_cast<int32_t>(e.code())) + ": " + e.message();
  }
  return "no error";
}

// Leaves this process no free descriptor: every number below the soft
// limit is taken (the lowest free one becomes the limit).
void run_out_of_descriptors() {
  const int lowest_free = ::dup(0);
  ::close(lowest_free);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
}

// Connects a socket made before the descriptors ran out (connect takes none).
void connect_on_loopback(int fd, uint16_t port) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
}

// Runs `body` in a fresh process (its limits changed there alone); passes
// when the body printed `expected_regex` to stderr and exited 0.
template <class Body>
void in_own_process(Body&& body, const std::string& expected_regex) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        rlimit was{};
        ::getrlimit(RLIMIT_NOFILE, &was);
        // UBSan checks a type's dynamic type the first time it meets it by
        // writing the object to a pipe: with no descriptor free, it took the
        // Error being thrown for a bad object. One made first, here, is known.
        (void)error_of([] { throw_error(StatusCode::kInternal, "while descriptors are free"); });
        body();
        ::setrlimit(RLIMIT_NOFILE, &was);  // the exit (a sanitizer's leak check) opens files
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), expected_regex);
}

TEST(OpenFileLimit, ARankNeedsASocketPerPeerAndStreamALaneEachAndRankZeroTheStoresClients) {
  EXPECT_EQ(open_files_needed(1, 2, true), 64u);
  EXPECT_EQ(open_files_needed(64, 2, false), 64u + 63 * 3);
  EXPECT_EQ(open_files_needed(64, 2, true), 64u + 63 * 3 + 63);
  EXPECT_EQ(open_files_needed(4, 16, false), 64u + 3 * 17);
}

TEST(OpenFileLimit, ASoftLimitBelowTheNeedIsRaisedToItAndNeverLowered) {
  rlimit was{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &was), 0);
  if (was.rlim_max != RLIM_INFINITY && was.rlim_max < 300) GTEST_SKIP() << "hard limit too low";
  rlimit low = was;
  low.rlim_cur = 200;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  ensure_open_file_limit(300, "a test");
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  EXPECT_EQ(now.rlim_cur, 300u);
  EXPECT_EQ(now.rlim_max, was.rlim_max);
  ensure_open_file_limit(100, "a test");
  ::getrlimit(RLIMIT_NOFILE, &now);
  EXPECT_EQ(now.rlim_cur, 300u);
  EXPECT_NE(open_file_limit_text().find("may hold 300 open files"), std::string::npos)
      << open_file_limit_text();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &was), 0);
}

TEST(OpenFileLimit, AHardLimitBelowTheNeedIsRefusedNamingBoth) {
  in_own_process(
      [] {
        rlimit hard{100, 100};
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &hard), 0);
        std::fputs(error_of([] { ensure_open_file_limit(253, "a 64-rank job"); }).c_str(), stderr);
      },
      "UNAVAILABLE: a 64-rank job needs about 253 open files in this process; it may hold 100 "
      "\\(ulimit -n\\) and at most 100 \\(ulimit -Hn\\)");
}

// Before: every accept error was "a stranger, dropped", and out of files the
// listener stayed readable, so the mesh and the store spun until the timeout.
TEST(OpenFileLimit, AcceptWithoutAFreeDescriptorThrowsAndANoShowIsNoConnection) {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  set_nonblocking(listener.get(), true);
  EXPECT_FALSE(accept_tcp(listener.get()).valid());  // EAGAIN: nobody waiting
  in_own_process(
      [&, port = port] {
        Fd client(::socket(AF_INET, SOCK_STREAM, 0));
        run_out_of_descriptors();
        connect_on_loopback(client.get(), port);
        std::fputs(error_of([&] { accept_tcp(listener.get()); }).c_str(), stderr);
      },
      "UNAVAILABLE: accept\\(\\): Too many open files \\(this process may hold [0-9]+ open "
      "files: ulimit -n\\)");
}

TEST(OpenFileLimit, ConnectWithoutAFreeDescriptorFailsAtOnceNotAtTheTimeout) {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  in_own_process(
      [port = port] {
        run_out_of_descriptors();
        std::fputs(
            error_of([&] { connect_tcp("127.0.0.1", port, Deadline(10), "rank 0", 1); }).c_str(),
            stderr);
      },
      "UNAVAILABLE: cannot connect to rank 0 at 127.0.0.1:[0-9]+: socket\\(\\): Too many open "
      "files");
}

// Rank 0 out of files cannot take the next rank: the ranks it has are told
// why at once, where they waited for the missing one until the timeout.
TEST(OpenFileLimit, AStoreOutOfDescriptorsTellsItsRanksWhy) {
  in_own_process(
      [] {
        const Credentials creds{{1, 2, 3, 4}, {}};
        auto [listener, port] = listen_tcp("127.0.0.1", 0);
        StoreServer server(std::move(listener), creds, 10.0);
        StoreClient rank0("127.0.0.1", port, creds, 0, 3, Deadline(10));
        Fd rank1(::socket(AF_INET, SOCK_STREAM, 0));
        run_out_of_descriptors();
        connect_on_loopback(rank1.get(), port);
        std::fputs(error_of([&] { rank0.get("peer/1"); }).c_str(), stderr);
      },
      "UNAVAILABLE: rank 0's rendezvous store cannot take more ranks: accept\\(\\): Too many "
      "open files");
}

}  // namespace
