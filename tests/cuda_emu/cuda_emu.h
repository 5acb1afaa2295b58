// A CPU stand-in for the CUDA device, so the CUDA C that codegen/cuda/cuda_printer.cpp generates can
// run in the test suite without a GPU (tests/codegen/cuda/cuda_emu_test.cpp). The generated source
// is compiled as C++ with this header force-included (`c++ -include cuda_emu.h -x c++`).
//
// Every CUDA thread of a block is a fiber on one OS thread; blocks run one after another. A
// fiber is started once with makecontext/swapcontext and then switched with _setjmp/_longjmp
// (no signal-mask system call per switch); it runs the kernel for block after block. The scheduler runs each ready fiber until it exits or waits at a barrier:
// __syncthreads releases when every live thread of the block waits there, __syncwarp (and each
// __shfl_xor_sync) when every live lane of the warp does. A barrier nobody can pass (a
// __syncthreads inside divergent code, a shuffle with an exited lane, a warp split between the
// two kinds of barrier) is reported as an error instead of hanging. Threads that exit early drop
// out of barriers, as on current GPUs. Scheduling is deterministic: lowest thread first, or
// highest first (dnnc_emu_set_reverse), which exposes a missing barrier after a store by a low
// thread (lane 0) that others read: run first, they read the old value.
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <ucontext.h>

#include <string>
#include <vector>

typedef long long i64;
typedef unsigned long long u64;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

// The running fiber's coordinates (one OS thread runs all fibers, so plain globals suffice).
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;

static inline float __int_as_float(unsigned v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
static inline double __longlong_as_double(long long v) {
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}
// Fibers never run at the same time: a plain read-modify-write is atomic here.
static inline int atomicCAS(int* p, int compare, int value) {
  int old = *p;
  if (old == compare) *p = value;
  return old;
}

namespace dnnc_emu {

enum class State { ready, block_barrier, warp_barrier, done };

struct Fiber {
  ucontext_t boot;  // the first entry only
  jmp_buf resume;   // where it waits
  State state = State::ready;
  bool started = false;
  char* stack = nullptr;
};

constexpr size_t kStack = 256 * 1024;
constexpr unsigned kMaxBlock = 1024;

static jmp_buf g_sched;     // the scheduler, while a fiber runs
static ucontext_t g_unused;  // swapcontext's save area for the scheduler (it comes back by _longjmp)
static Fiber g_fibers[kMaxBlock];
static Fiber* g_current = nullptr;
static void (*g_call)(void**) = nullptr;
static void** g_args = nullptr;
static u64 g_slots[kMaxBlock];  // shuffle exchange
static std::string g_error;
static bool g_reverse = false;

static void fail(const std::string& what) {
  if (g_error.empty()) g_error = what;
}

// Fiber -> scheduler.
static void yield() {
  if (!_setjmp(g_current->resume)) _longjmp(g_sched, 1);
}

// Runs the kernel for each block it is resumed for; never returns.
static void fiber_main() {
  for (;;) {
    g_call(g_args);
    g_current->state = State::done;
    yield();
  }
}

// Scheduler -> fiber `f`, until it waits or finishes the block.
static void resume(Fiber& f) {
  g_current = &f;
  if (_setjmp(g_sched)) return;
  if (f.started) _longjmp(f.resume, 1);
  f.started = true;
  if (!f.stack) f.stack = static_cast<char*>(malloc(kStack));
  getcontext(&f.boot);
  f.boot.uc_stack.ss_sp = f.stack;
  f.boot.uc_stack.ss_size = kStack;
  f.boot.uc_link = nullptr;
  makecontext(&f.boot, fiber_main, 0);
  swapcontext(&g_unused, &f.boot);
}

static void wait(State s) {
  g_current->state = s;
  yield();
}

static std::string where() {
  char buf[96];
  snprintf(buf, sizeof buf, "block %u, thread %u", blockIdx.x, threadIdx.x);
  return buf;
}

}  // namespace dnnc_emu

static inline void __syncthreads() { dnnc_emu::wait(dnnc_emu::State::block_barrier); }
static inline void __syncwarp(unsigned = 0xffffffffu) { dnnc_emu::wait(dnnc_emu::State::warp_barrier); }

namespace dnnc_emu {

// Every lane of the warp publishes `v`, then reads lane `other`'s (which must not have exited).
template <class T>
static inline T shuffle(T v, unsigned other, const char* what) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  const unsigned me = threadIdx.x;
  memcpy(&g_slots[me], &v, sizeof(T));
  __syncwarp();
  if (other >= blockDim.x || g_fibers[other].state == State::done)
    fail(std::string(what) + " at " + where() + " reads lane " + std::to_string(other) +
         ", which has exited or does not exist");
  T r;
  memcpy(&r, &g_slots[other < blockDim.x ? other : me], sizeof(T));
  __syncwarp();  // nobody overwrites a slot before every lane has read its partner's
  return r;
}

}  // namespace dnnc_emu

template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  const unsigned me = threadIdx.x;
  return dnnc_emu::shuffle(v, (me & ~31u) | ((me & 31u) ^ static_cast<unsigned>(lane_mask)), "__shfl_xor_sync");
}

template <class T>
static inline T __shfl_sync(unsigned, T v, int src_lane) {
  return dnnc_emu::shuffle(v, (threadIdx.x & ~31u) | (static_cast<unsigned>(src_lane) & 31u), "__shfl_sync");
}

// Later launches run the threads of a block highest first (true) or lowest first (false).
extern "C" __attribute__((visibility("default"))) void dnnc_emu_set_reverse(int reverse) {
  dnnc_emu::g_reverse = reverse != 0;
}

// Runs `call(args)` as a kernel on a grid of `grid` blocks of `block` threads. Returns nullptr,
// or what went wrong (a barrier nobody can pass). Kernel failures are the caller's error flag.
extern "C" __attribute__((visibility("default"))) const char* dnnc_emu_launch(void (*call)(void**), void** args,
                                                                           unsigned grid, unsigned block) {
  using namespace dnnc_emu;
  g_error.clear();
  if (block == 0 || block > kMaxBlock || block % 32 != 0 || grid == 0) {
    g_error = "bad launch: " + std::to_string(grid) + " blocks of " + std::to_string(block) + " threads";
    return g_error.c_str();
  }
  g_call = call;
  g_args = args;
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid && g_error.empty(); ++b) {
    blockIdx.x = b;
    for (unsigned t = 0; t < block; ++t) g_fibers[t].state = State::ready;
    for (;;) {
      for (unsigned u = 0; u < block; ++u) {
        const unsigned t = g_reverse ? block - 1 - u : u;
        Fiber& f = g_fibers[t];
        if (f.state != State::ready) continue;
        threadIdx.x = t;
        resume(f);
      }
      // Every fiber now waits or is done. Release warps whose live lanes all wait at
      // __syncwarp; then the block if every live thread waits at __syncthreads.
      bool released = false, live = false, all_block = true;
      for (unsigned w = 0; w < block / 32; ++w) {
        int warp = 0, block_waits = 0, n = 0;
        for (unsigned l = 0; l < 32; ++l) {
          State s = g_fibers[w * 32 + l].state;
          if (s == State::done) continue;
          ++n;
          warp += s == State::warp_barrier;
          block_waits += s == State::block_barrier;
        }
        live |= n > 0;
        all_block &= block_waits == n;
        if (warp > 0 && block_waits > 0) {
          fail("warp " + std::to_string(w) + " of block " + std::to_string(b) +
               " is split between __syncwarp and __syncthreads");
        } else if (n > 0 && warp == n) {
          for (unsigned l = 0; l < 32; ++l)
            if (g_fibers[w * 32 + l].state == State::warp_barrier) g_fibers[w * 32 + l].state = State::ready;
          released = true;
        }
      }
      if (!live) break;
      if (!released && all_block) {
        for (unsigned t = 0; t < block; ++t)
          if (g_fibers[t].state == State::block_barrier) g_fibers[t].state = State::ready;
        released = true;
      }
      if (!released || !g_error.empty()) {
        // Nobody can go on: abandon the block; its fibers start afresh at the next launch.
        for (unsigned t = 0; t < block; ++t) g_fibers[t].started = false;
        fail("block " + std::to_string(b) + " cannot pass a barrier: some threads wait at __syncthreads while others wait at __syncwarp or have exited");
        break;
      }
    }
  }
  return g_error.empty() ? nullptr : g_error.c_str();
}
