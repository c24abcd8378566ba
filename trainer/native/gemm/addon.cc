// Node-API binding of the products in kernels.cc (synchronous calls on Float32Arrays, split
// across threads by output columns), of SwiGLU and attention's causal softmax in activations.cc
// (split by elements, by rows), of RMSNorm
// in norm.cc (split by rows), of RoPE in rope.cc and of AdamW's host update in adamw.cc. Node-API is
// ABI-stable, so one build serves Node and Electron alike.
#include <node_api.h>

#include <algorithm>
#include <cstdint>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "activations.h"
#include "adamw.h"
#include "norm.h"
#include "rope.h"
#include "kernels.h"

namespace {

using clawrl_gemm::ProductFn;

struct Isa {
  const char* name;
  ProductFn nt;
  ProductFn nn;
  ProductFn tn;
  clawrl_act::SwigluFn swiglu;
  clawrl_act::SwigluBackwardFn swigluBackward;
  clawrl_rope::RopeFn rope;
  clawrl_act::CausalSoftmaxFn causalSoftmax;
  clawrl_act::CausalSoftmaxBackwardFn causalSoftmaxBackward;
  clawrl_act::SoftmaxRowsFn softmaxRows;
  clawrl_norm::RmsNormFn rmsNorm;
  clawrl_norm::RmsNormBackwardFn rmsNormBackward;
};

Isa pickIsa() {
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", clawrl_gemm::avx2::nt, clawrl_gemm::avx2::nn, clawrl_gemm::avx2::tn, clawrl_act::avx2::swiglu, clawrl_act::avx2::swigluBackward, clawrl_rope::avx2::rope, clawrl_act::avx2::causalSoftmax, clawrl_act::avx2::causalSoftmaxBackward, clawrl_act::avx2::softmaxRows, clawrl_norm::avx2::rmsNorm, clawrl_norm::avx2::rmsNormBackward};
#endif
  return {"generic", clawrl_gemm::generic::nt, clawrl_gemm::generic::nn, clawrl_gemm::generic::tn, clawrl_act::generic::swiglu, clawrl_act::generic::swigluBackward, clawrl_rope::generic::rope, clawrl_act::generic::causalSoftmax, clawrl_act::generic::causalSoftmaxBackward, clawrl_act::generic::softmaxRows, clawrl_norm::generic::rmsNorm, clawrl_norm::generic::rmsNormBackward};
}

const Isa kIsa = pickIsa();
size_t gThreads = std::max(1u, std::thread::hardware_concurrency());

napi_value throwError(napi_env env, const std::string& message) {
  napi_throw_error(env, "CLAWRL_GEMM", message.c_str());
  return nullptr;
}

bool floatArray(napi_env env, napi_value v, float** data, size_t* length) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_typedarray_type type;
  void* raw = nullptr;
  napi_value buffer;
  size_t offset = 0;
  if (napi_get_typedarray_info(env, v, &type, length, &raw, &buffer, &offset) != napi_ok) return false;
  if (type != napi_float32_array) return false;
  *data = static_cast<float*>(raw);
  return true;
}

bool dimension(napi_env env, napi_value v, size_t* out) {
  double d = 0;
  if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d != static_cast<double>(static_cast<size_t>(d))) return false;
  *out = static_cast<size_t>(d);
  return true;
}

// Threads that persist between calls: a training step makes thousands of products of a few
// MFLOP (attention's, per head), where starting and joining a thread per call cost as much as the
// product. run(n, job) runs job(0) on the caller and job(1..n-1) on the workers, and returns when
// all are done; calls are serialized (Node worker threads may share the addon).
class Pool {
 public:
  void run(size_t n, const std::function<void(size_t)>& job) {
    std::lock_guard<std::mutex> serial(callMu_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Workers are started as needed and never joined: the pool lives as long as the process.
      for (; workers_ + 1 < n; workers_++) std::thread([this, index = workers_ + 1] { loop(index); }).detach();
      job_ = &job;
      count_ = n;
      pending_ = n - 1;
      generation_++;
    }
    wake_.notify_all();
    job(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(size_t index) {
    size_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= count_) continue;
      const std::function<void(size_t)>* job = job_;
      lock.unlock();
      (*job)(index);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex callMu_, mu_;
  std::condition_variable wake_, done_;
  size_t workers_ = 0;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t count_ = 0, pending_ = 0, generation_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // not destroyed at exit: its workers are still waiting on it
  return *p;
}

// Columns [0, n) split into one contiguous, 16-aligned range per thread.
void runSplit(ProductFn fn, const float* a, const float* b, float* c, size_t m, size_t n, size_t k, bool accumulate) {
  const double work = static_cast<double>(m) * n * k;
  // Below ~4 MFLOP a second thread costs more than it saves.
  const size_t threads = work < 2e6 ? 1 : std::min(gThreads, std::max<size_t>(1, n / 16));
  const size_t per = ((n + threads - 1) / threads + 15) / 16 * 16;
  if (threads == 1) {
    fn(a, b, c, m, n, k, 0, n, accumulate);
    return;
  }
  pool().run(threads, [&](size_t t) {
    const size_t n0 = t * per, n1 = std::min(n, (t + 1) * per);
    if (n0 < n1) fn(a, b, c, m, n, k, n0, n1, accumulate);
  });
}

// Elements [0, n) split into one contiguous range per thread, 8-aligned (a vector's width).
// `grain`: the elements below which a second thread costs more than it saves (a shift: 18 is
// ~256 K elements, ~1 MiB an operand, for the activations' cheap elementwise kernels).
void runElements(size_t n, const std::function<void(size_t, size_t)>& fn, unsigned grain = 18) {
  const size_t threads = std::min(gThreads, std::max<size_t>(1, n >> grain));
  if (threads == 1) {
    fn(0, n);
    return;
  }
  const size_t per = ((n + threads - 1) / threads + 7) / 8 * 8;
  pool().run(threads, [&](size_t t) {
    const size_t i0 = t * per, i1 = std::min(n, (t + 1) * per);
    if (i0 < i1) fn(i0, i1);
  });
}

// Rows [0, rows) of `cols` floats split into one contiguous range per thread.
void runRows(size_t rows, size_t cols, const std::function<void(size_t, size_t)>& fn) {
  // As runElements: below ~256 K elements one thread.
  const size_t threads = std::min({gThreads, std::max<size_t>(1, (rows * cols) >> 18), std::max<size_t>(1, rows)});
  if (threads == 1) {
    fn(0, rows);
    return;
  }
  const size_t per = (rows + threads - 1) / threads;
  pool().run(threads, [&](size_t t) {
    const size_t r0 = t * per, r1 = std::min(rows, (t + 1) * per);
    if (r0 < r1) fn(r0, r1);
  });
}

// Reads `count` Float32Arrays of one length from argv; false (with the error thrown) where not.
bool sameLengthArrays(napi_env env, const char* what, napi_value* argv, size_t count, float** arr, size_t* n) {
  for (size_t i = 0; i < count; i++) {
    size_t len = 0;
    if (!floatArray(env, argv[i], &arr[i], &len)) {
      throwError(env, std::string(what) + ": its arguments must be Float32Arrays");
      return false;
    }
    if (i == 0) *n = len;
    if (len != *n) {
      throwError(env, std::string(what) + ": the arrays differ in length (" + std::to_string(*n) + " and " + std::to_string(len) + ")");
      return false;
    }
  }
  return true;
}

// True where an output array [o, o + n) overlaps an input at another offset (the same element in
// place is fine: each is read before it is written).
bool overlapsElsewhere(const float* o, const float* i, size_t n) { return n > 0 && o != i && o < i + n && i < o + n; }

// swiglu(g, u, out): out = silu(g)·u. swigluBackward(g, u, dy, dg, du): both gradients.
template <bool Backward>
napi_value swiglu(napi_env env, napi_callback_info info) {
  constexpr size_t ins = Backward ? 3 : 2, count = Backward ? 5 : 3;
  const char* what = Backward ? "swigluBackward" : "swiglu";
  size_t argc = count;
  napi_value argv[count];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != count) return throwError(env, std::string(what) + (Backward ? " expects (g, u, dy, dg, du)" : " expects (g, u, out)"));
  float* arr[count];
  size_t n = 0;
  if (!sameLengthArrays(env, what, argv, count, arr, &n)) return nullptr;
  for (size_t o = ins; o < count; o++)
    for (size_t i = 0; i < count; i++) {
      // An output may be an input's own memory (in place), never another output's.
      const bool bad = i < ins ? overlapsElsewhere(arr[o], arr[i], n) : o < i && n > 0 && arr[o] < arr[i] + n && arr[i] < arr[o] + n;
      if (bad) return throwError(env, std::string(what) + ": an output overlaps another array");
    }
  if (Backward) {
    runElements(n, [&](size_t i0, size_t i1) { kIsa.swigluBackward(arr[0], arr[1], arr[2], arr[3], arr[4], i0, i1); });
  } else {
    runElements(n, [&](size_t i0, size_t i1) { kIsa.swiglu(arr[0], arr[1], arr[2], i0, i1); });
  }
  return nullptr;
}

// rmsNorm(x, w, y, cols, eps): y = x·w / sqrt(mean(x²) + eps) per row of `cols`.
// rmsNormBackward(x, w, dy, dx, cols, eps): the gradient for x. See norm.h.
template <bool Backward>
napi_value rmsNorm(napi_env env, napi_callback_info info) {
  constexpr size_t arrays = Backward ? 4 : 3, count = arrays + 2;
  const char* what = Backward ? "rmsNormBackward" : "rmsNorm";
  size_t argc = count;
  napi_value argv[count];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != count) return throwError(env, std::string(what) + (Backward ? " expects (x, w, dy, dx, cols, eps)" : " expects (x, w, y, cols, eps)"));
  float* arr[arrays];
  size_t len[arrays];
  for (size_t i = 0; i < arrays; i++)
    if (!floatArray(env, argv[i], &arr[i], &len[i])) return throwError(env, std::string(what) + ": its arrays must be Float32Arrays");
  size_t cols = 0;
  double eps = 0;
  if (!dimension(env, argv[arrays], &cols) || cols == 0 || napi_get_value_double(env, argv[arrays + 1], &eps) != napi_ok || !(eps >= 0)) {
    return throwError(env, std::string(what) + ": cols must be a positive integer and eps a non-negative number");
  }
  const size_t n = len[0];
  bool shapes = n % cols == 0 && len[1] == cols;
  for (size_t i = 2; i < arrays; i++) shapes = shapes && len[i] == n;
  if (!shapes) return throwError(env, std::string(what) + ": x, " + (Backward ? "dy and dx" : "y") + " need whole rows of " + std::to_string(cols) + " floats and w one row; got " + std::to_string(n) + " and " + std::to_string(len[1]));
  // The output may be x's or dy's own memory (each row is read before it is written), never
  // elsewhere in them, and never w's (every row reads all of it).
  float* out = arr[arrays - 1];
  const bool onW = n > 0 && out < arr[1] + cols && arr[1] < out + n;
  bool elsewhere = false;
  for (size_t i = 0; i + 1 < arrays; i++) elsewhere = elsewhere || (i != 1 && overlapsElsewhere(out, arr[i], n));
  if (onW || elsewhere) return throwError(env, std::string(what) + ": the output overlaps an input at another offset");
  const size_t rows = n / cols;
  const float e = static_cast<float>(eps);
  if (Backward) {
    runRows(rows, cols, [&](size_t r0, size_t r1) { kIsa.rmsNormBackward(arr[0], arr[1], arr[2], arr[3], cols, e, r0, r1); });
  } else {
    runRows(rows, cols, [&](size_t r0, size_t r1) { kIsa.rmsNorm(arr[0], arr[1], arr[2], cols, e, r0, r1); });
  }
  return nullptr;
}

// causalSoftmax(s, p, T, scale): attention's probabilities from raw scores, rows of T, row r at
// query position r mod T. causalSoftmaxBackward(p, dp, ds, T, scale): the scores' gradient.
template <bool Backward>
napi_value causalSoftmax(napi_env env, napi_callback_info info) {
  constexpr size_t arrays = Backward ? 3 : 2, count = arrays + 2;
  const char* what = Backward ? "causalSoftmaxBackward" : "causalSoftmax";
  size_t argc = count;
  napi_value argv[count];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != count) return throwError(env, std::string(what) + (Backward ? " expects (p, dp, ds, T, scale)" : " expects (s, p, T, scale)"));
  float* arr[arrays];
  size_t n = 0;
  if (!sameLengthArrays(env, what, argv, arrays, arr, &n)) return nullptr;
  size_t T = 0;
  double scale = 0;
  if (!dimension(env, argv[arrays], &T) || T == 0 || napi_get_value_double(env, argv[arrays + 1], &scale) != napi_ok || !(scale > 0)) {
    return throwError(env, std::string(what) + ": T must be a positive integer and scale a positive number");
  }
  if (n % T != 0) return throwError(env, std::string(what) + ": " + std::to_string(n) + " floats are not whole rows of " + std::to_string(T));
  float* out = arr[arrays - 1];
  for (size_t i = 0; i + 1 < arrays; i++)
    if (n > 0 && out < arr[i] + n && arr[i] < out + n) return throwError(env, std::string(what) + ": the output overlaps an input");
  const float sc = static_cast<float>(scale);
  if (Backward) {
    runRows(n / T, T, [&](size_t r0, size_t r1) { kIsa.causalSoftmaxBackward(arr[0], arr[1], arr[2], T, sc, r0, r1); });
  } else {
    runRows(n / T, T, [&](size_t r0, size_t r1) { kIsa.causalSoftmax(arr[0], arr[1], T, sc, r0, r1); });
  }
  return nullptr;
}

// softmaxRows(z, p, lse, cols): per row of `cols` logits, p = softmax(z) and lse = log Σ exp(z)
// (the output head's vocabulary slices: activations.h).
napi_value softmaxRows(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 4) return throwError(env, "softmaxRows expects (z, p, lse, cols)");
  float* arr[2];
  size_t n = 0, rows = 0, cols = 0;
  float* lse;
  if (!sameLengthArrays(env, "softmaxRows", argv, 2, arr, &n)) return nullptr;
  if (!floatArray(env, argv[2], &lse, &rows)) return throwError(env, "softmaxRows: lse must be a Float32Array");
  if (!dimension(env, argv[3], &cols) || cols == 0) return throwError(env, "softmaxRows: cols must be a positive integer");
  if (n != rows * cols) return throwError(env, "softmaxRows: " + std::to_string(n) + " logits are not " + std::to_string(rows) + " rows of " + std::to_string(cols));
  if (overlapsElsewhere(arr[1], arr[0], n) || (rows > 0 && ((lse < arr[0] + n && arr[0] < lse + rows) || (lse < arr[1] + n && arr[1] < lse + rows)))) {
    return throwError(env, "softmaxRows: an output overlaps an input at another offset");
  }
  runRows(rows, cols, [&](size_t r0, size_t r1) { kIsa.softmaxRows(arr[0], arr[1], lse, cols, r0, r1); });
  return nullptr;
}

// rope(x, cos, sin, out, rows, tableRows, heads, headDim, nRot, neox, inverse): see rope.h.
napi_value rope(napi_env env, napi_callback_info info) {
  size_t argc = 11;
  napi_value argv[11];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 11) {
    return throwError(env, "rope expects (x, cos, sin, out, rows, tableRows, heads, headDim, nRot, neox, inverse)");
  }
  float* arr[4];
  size_t len[4];
  for (int i = 0; i < 4; i++)
    if (!floatArray(env, argv[i], &arr[i], &len[i])) return throwError(env, "rope: x, cos, sin and out must be Float32Arrays");
  clawrl_rope::RopeShape s{};
  size_t* dims[] = {&s.rows, &s.tableRows, &s.heads, &s.headDim, &s.nRot};
  for (int i = 0; i < 5; i++)
    if (!dimension(env, argv[4 + i], dims[i])) return throwError(env, "rope: rows, tableRows, heads, headDim and nRot must be non-negative integers");
  if (napi_get_value_bool(env, argv[9], &s.neox) != napi_ok || napi_get_value_bool(env, argv[10], &s.inverse) != napi_ok) return throwError(env, "rope: neox and inverse must be booleans");
  const size_t n = s.rows * s.heads * s.headDim, table = s.tableRows * (s.nRot / 2);
  if (s.nRot % 2 != 0 || s.nRot > s.headDim || (s.rows > 0 && s.tableRows == 0)) return throwError(env, "rope: nRot must be even and at most headDim, with a table row for every position");
  if (len[0] != n || len[3] != n || len[1] < table || len[2] < table) {
    return throwError(env, "rope: x and out need " + std::to_string(n) + " floats and cos and sin " + std::to_string(table) + "; got " + std::to_string(len[0]) + ", " + std::to_string(len[3]) + ", " + std::to_string(len[1]) + ", " + std::to_string(len[2]));
  }
  if (overlapsElsewhere(arr[3], arr[0], n)) return throwError(env, "rope: out overlaps x at another offset");
  if (n > 0) kIsa.rope(arr[0], arr[1], arr[2], arr[3], s);
  return nullptr;
}

// tn with few columns (a LoRA factor's gradient xᵀ·t: [M, K]ᵀ·[M, r], r ≤ 32), as its transpose
// Cᵀ = Bᵀ·A: nn reads A's rows in order and splits its m columns over the threads. tn itself
// walks down A's k rows for every 6 output rows, k lines a stride of m floats apart at a time
// (the prefetcher does not follow), and runs on one thread (one 16-column tile): ~20 GFLOP/s in a
// 1 × 128 step of the 0.5B shape. The transposes are of the small operands (b, and C as it is
// stored). C is the sum added to C where accumulating, as nt's panels round.
constexpr size_t TN_NARROW = 32;

void tnNarrow(const float* a, const float* b, float* c, size_t m, size_t n, size_t k, bool accumulate) {
  // Per calling thread (Node worker threads may share the addon), only ever grown.
  thread_local std::vector<float> bt, ct;
  if (bt.size() < n * k) bt.resize(n * k);
  if (ct.size() < n * m) ct.resize(n * m);
  for (size_t q = 0; q < k; q++)
    for (size_t j = 0; j < n; j++) bt[j * k + q] = b[q * n + j];
  runSplit(kIsa.nn, bt.data(), a, ct.data(), n, m, k, false);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) c[i * n + j] = accumulate ? c[i * n + j] + ct[j * m + i] : ct[j * m + i];
}

// product(a, b, c, m, n, k[, accumulate]): c[m,n] = a[m,k]·bᵀ (b [n,k]) for "nt", a[m,k]·b
// (b [k,n]) for "nn", aᵀ·b (a [k,m], b [k,n]) for "tn"; with accumulate true, c += it.
enum class Form { NT, NN, TN };

template <Form F>
napi_value product(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc < 6 || argc > 7) return throwError(env, "expected (a, b, c, m, n, k[, accumulate])");
  bool accumulate = false;
  napi_valuetype seventh = napi_undefined;
  if (argc == 7 && napi_typeof(env, argv[6], &seventh) == napi_ok && seventh != napi_undefined && napi_get_value_bool(env, argv[6], &accumulate) != napi_ok) {
    return throwError(env, "accumulate must be a boolean");
  }
  float *a, *b, *c;
  size_t la, lb, lc, m, n, k;
  if (!floatArray(env, argv[0], &a, &la) || !floatArray(env, argv[1], &b, &lb) || !floatArray(env, argv[2], &c, &lc)) {
    return throwError(env, "a, b and c must be Float32Arrays");
  }
  if (!dimension(env, argv[3], &m) || !dimension(env, argv[4], &n) || !dimension(env, argv[5], &k)) return throwError(env, "m, n and k must be non-negative integers");
  if (la < m * k || lb < n * k || lc < m * n) {
    const std::string M = std::to_string(m), N = std::to_string(n), K = std::to_string(k);
    const std::string shapes = F == Form::NT ? "[" + M + "," + K + "] by [" + N + "," + K + "]ᵀ" : F == Form::NN ? "[" + M + "," + K + "] by [" + K + "," + N + "]" : "[" + K + "," + M + "]ᵀ by [" + K + "," + N + "]";
    return throwError(env, "a product of " + shapes + " needs arrays of " + std::to_string(m * k) + ", " + std::to_string(n * k) + " and " + std::to_string(m * n) + " floats; got " + std::to_string(la) + ", " + std::to_string(lb) + ", " + std::to_string(lc));
  }
  if (m == 0 || n == 0) return nullptr;
  if (F == Form::TN && n <= TN_NARROW && k > 0 && m >= 4 * n) {
    tnNarrow(a, b, c, m, n, k, accumulate);
    return nullptr;
  }
  runSplit(F == Form::NT ? kIsa.nt : F == Form::NN ? kIsa.nn : kIsa.tn, a, b, c, m, n, k, accumulate);
  return nullptr;
}

// copyHeads(matrix, block, pitch, row0, L, col0, width, count, back): attention's per-group
// gather (trainer/model/attention-host.ts). For head hh < count and position t < L, the `width`
// floats of matrix row row0 + t (rows `pitch` floats apart) at column col0 + hh·width are block row
// hh·L + t; copied into the block, or from it where `back`. In JavaScript these ~400 K short
// copies a 1 x 128 step of the 0.5B shape cost as much as attention's products.
napi_value copyHeads(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  float *matrix, *block;
  size_t lm, lb, dims[6];
  bool back = false;
  const char* usage = "copyHeads expects (matrix, block, pitch, row0, L, col0, width, count, back)";
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 9 || !floatArray(env, argv[0], &matrix, &lm) || !floatArray(env, argv[1], &block, &lb)) {
    return throwError(env, usage);
  }
  for (size_t i = 0; i < 6; i++)
    if (!dimension(env, argv[2 + i], &dims[i])) return throwError(env, usage);
  if (napi_get_value_bool(env, argv[8], &back) != napi_ok) return throwError(env, usage);
  const auto [pitch, row0, L, col0, width, count] = dims;
  if (L == 0 || width == 0 || count == 0) return nullptr;
  if (col0 + count * width > pitch || (row0 + L - 1) * pitch + col0 + count * width > lm || count * L * width > lb) {
    return throwError(env, "copyHeads: the heads lie outside the matrix or the block");
  }
  for (size_t hh = 0; hh < count; hh++)
    for (size_t t = 0; t < L; t++) {
      float* m = matrix + (row0 + t) * pitch + col0 + hh * width;
      float* b = block + (hh * L + t) * width;
      std::memcpy(back ? m : b, back ? b : m, width * sizeof(float));
    }
  return nullptr;
}

// sumSquares(g, sum): sum + Σ g[i]² in double (the gradient norm's square, a parameter at a time).
napi_value sumSquares(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  float* g;
  size_t n;
  double sum = 0;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 2 || !floatArray(env, argv[0], &g, &n) || napi_get_value_double(env, argv[1], &sum) != napi_ok) {
    return throwError(env, "sumSquares expects a Float32Array and a number");
  }
  napi_value out;
  napi_create_double(env, clawrl_optim::sumSquares(g, n, sum), &out);
  return out;
}

// adamw(g, p, m, v, pOut, mOut, vOut, scale, beta1, beta2, decay, stepSize, sqrtBc2, eps): one
// parameter's update (adamw.h); the seven arrays of one length, the outputs apart from the inputs.
napi_value adamw(napi_env env, napi_callback_info info) {
  size_t argc = 14;
  napi_value argv[14];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 14) return throwError(env, "adamw expects 7 Float32Arrays and 7 numbers");
  float* arr[7];
  size_t len[7];
  for (int i = 0; i < 7; i++) {
    if (!floatArray(env, argv[i], &arr[i], &len[i])) return throwError(env, "adamw: its first 7 arguments must be Float32Arrays");
    if (len[i] != len[0]) return throwError(env, "adamw: the arrays differ in length (" + std::to_string(len[0]) + " and " + std::to_string(len[i]) + ")");
  }
  double k[7];
  for (int i = 0; i < 7; i++) {
    if (napi_get_value_double(env, argv[7 + i], &k[i]) != napi_ok) return throwError(env, "adamw: its last 7 arguments must be numbers");
  }
  for (int o = 4; o < 7; o++)
    for (int i = 0; i < 4; i++) {
      const float *ob = arr[o], *ib = arr[i];
      if (len[0] > 0 && ob < ib + len[0] && ib < ob + len[0]) return throwError(env, "adamw: an output overlaps an input");
    }
  const clawrl_optim::AdamWScalars s{k[0], k[1], k[2], k[3], k[4], k[5], k[6]};
  // Split from 16 K elements (a LoRA factor of the 0.5B shape is 14-78 K): a division and a
  // square root in double an element make it ~8 ns each, single-threaded 7% of a 1 × 128 step.
  // Elementwise, so the split does not change a bit.
  runElements(
      len[0], [&](size_t i0, size_t i1) { clawrl_optim::adamwUpdate(arr[0] + i0, arr[1] + i0, arr[2] + i0, arr[3] + i0, arr[4] + i0, arr[5] + i0, arr[6] + i0, i1 - i0, s); }, 14);
  return nullptr;
}

// misalignment(a): a's data address mod 64 (a cache line), so that JavaScript can place a
// weight's floats on a line boundary (gemm.ts alignedFloats): nn reads B's rows 16 floats at a
// time, and on a row that starts 16 bytes past a line every other load spans two lines.
napi_value misalignment(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  float* data;
  size_t n;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 1 || !floatArray(env, argv[0], &data, &n)) {
    return throwError(env, "misalignment expects a Float32Array");
  }
  napi_value out;
  napi_create_uint32(env, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data) % 64), &out);
  return out;
}

napi_value setThreads(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  size_t n = 0;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 1 || !dimension(env, argv[0], &n) || n < 1) {
    return throwError(env, "setThreads expects a positive integer");
  }
  gThreads = std::min<size_t>(n, 256);
  return nullptr;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_value isa, threads, accumulates;
  napi_get_boolean(env, true, &accumulates);
  napi_create_string_utf8(env, kIsa.name, NAPI_AUTO_LENGTH, &isa);
  napi_create_uint32(env, static_cast<uint32_t>(gThreads), &threads);
  napi_property_descriptor props[] = {
      {"nt", nullptr, product<Form::NT>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"nn", nullptr, product<Form::NN>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"tn", nullptr, product<Form::TN>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"swiglu", nullptr, swiglu<false>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"swigluBackward", nullptr, swiglu<true>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"causalSoftmax", nullptr, causalSoftmax<false>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"causalSoftmaxBackward", nullptr, causalSoftmax<true>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"softmaxRows", nullptr, softmaxRows, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"rmsNorm", nullptr, rmsNorm<false>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"rmsNormBackward", nullptr, rmsNorm<true>, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"rope", nullptr, rope, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"sumSquares", nullptr, sumSquares, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"copyHeads", nullptr, copyHeads, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"adamw", nullptr, adamw, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"misalignment", nullptr, misalignment, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"setThreads", nullptr, setThreads, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"isa", nullptr, nullptr, nullptr, nullptr, isa, napi_enumerable, nullptr},
      {"accumulates", nullptr, nullptr, nullptr, nullptr, accumulates, napi_enumerable, nullptr},
      {"hardwareThreads", nullptr, nullptr, nullptr, nullptr, threads, napi_enumerable, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
