//===- Interpreter.cpp - reference interpreter for tg IR ------------------===//
//
// Straightforward loops in double precision, one function per op, each
// following the op's description in TGOps.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Reference/Interpreter.h"
#include "MoE.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using tgc::ref::InterpretOptions;
using tgc::ref::Tensor;

Tensor::Tensor(std::vector<int64_t> shape, double fill)
    : shape(std::move(shape)) {
  int64_t n = 1;
  for (int64_t d : this->shape)
    n *= d;
  data.assign(n, fill);
}

namespace {

using Shape = std::vector<int64_t>;

Shape shapeOf(Value v) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  return Shape(type.getShape().begin(), type.getShape().end());
}

Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Expands `t` to `shape` under NumPy broadcasting.
Tensor broadcastTo(const Tensor &t, const Shape &shape) {
  if (t.shape == shape)
    return t;
  Tensor out(shape);
  Shape outStrides = stridesOf(shape), inStrides = stridesOf(t.shape);
  size_t lead = shape.size() - t.shape.size();
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t idx = rem / outStrides[d];
      rem %= outStrides[d];
      if (d >= lead && t.shape[d - lead] != 1)
        src += idx * inStrides[d - lead];
    }
    out[i] = t[src];
  }
  return out;
}

template <typename F> Tensor map(const Tensor &t, F f) {
  Tensor out = t;
  for (double &x : out.data)
    x = f(x);
  return out;
}

template <typename F>
Tensor zip(const Tensor &a, const Tensor &b, const Shape &shape, F f) {
  Tensor x = broadcastTo(a, shape), y = broadcastTo(b, shape), out(shape);
  for (int64_t i = 0; i < out.numElements(); ++i)
    out[i] = f(x[i], y[i]);
  return out;
}

/// Splits `shape` around `axis` into (outer, size, inner) extents.
void splitAxis(const Shape &shape, int64_t axis, int64_t &outer, int64_t &size,
               int64_t &inner) {
  outer = product(llvm::ArrayRef(shape).take_front(axis));
  size = shape[axis];
  inner = product(llvm::ArrayRef(shape).drop_front(axis + 1));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCoeff = 0.044715;

double gelu(double x, bool tanhForm) {
  if (tanhForm)
    return 0.5 * x *
           (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

double geluDerivative(double x, bool tanhForm) {
  if (tanhForm) {
    double u = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
    double t = std::tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi *
                                 (1.0 + 3.0 * kGeluCoeff * x * x);
  }
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}

int64_t clampId(double id, int64_t rows) {
  int64_t i = static_cast<int64_t>(id);
  return std::min<int64_t>(std::max<int64_t>(i, 0), rows - 1);
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

Tensor transpose(const Tensor &in, llvm::ArrayRef<int64_t> perm) {
  Shape outShape;
  for (int64_t p : perm)
    outShape.push_back(in.shape[p]);
  Tensor out(outShape);
  Shape inStrides = stridesOf(in.shape), outStrides = stridesOf(outShape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = 0; d < perm.size(); ++d) {
      src += (rem / outStrides[d]) * inStrides[perm[d]];
      rem %= outStrides[d];
    }
    out[i] = in[src];
  }
  return out;
}

Tensor reduceSum(const Tensor &in, llvm::ArrayRef<int64_t> dims,
                 const Shape &outShape) {
  Shape keptShape = in.shape;
  for (int64_t d : dims)
    keptShape[d] = 1;
  Tensor out(keptShape);
  Shape inStrides = stridesOf(in.shape), keptStrides = stridesOf(keptShape);
  for (int64_t i = 0; i < in.numElements(); ++i) {
    int64_t rem = i, dst = 0;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      int64_t idx = rem / inStrides[d];
      rem %= inStrides[d];
      if (keptShape[d] != 1)
        dst += idx * keptStrides[d];
    }
    out[dst] += in[i];
  }
  out.shape = outShape;
  return out;
}

Tensor sliceAxis(const Tensor &in, int64_t axis, int64_t start, int64_t size) {
  int64_t outer, dim, inner;
  splitAxis(in.shape, axis, outer, dim, inner);
  Shape shape = in.shape;
  shape[axis] = size;
  Tensor out(shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s = 0; s < size; ++s)
      for (int64_t i = 0; i < inner; ++i)
        out[(o * size + s) * inner + i] = in[(o * dim + start + s) * inner + i];
  return out;
}

Tensor padAxis(const Tensor &in, int64_t axis, int64_t low, int64_t high) {
  int64_t outer, dim, inner;
  splitAxis(in.shape, axis, outer, dim, inner);
  Shape shape = in.shape;
  shape[axis] = dim + low + high;
  Tensor out(shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s = 0; s < dim; ++s)
      for (int64_t i = 0; i < inner; ++i)
        out[(o * shape[axis] + low + s) * inner + i] =
            in[(o * dim + s) * inner + i];
  return out;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

Tensor matmul(const Tensor &a, const Tensor &b, bool ta, bool tb,
              const Shape &outShape) {
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  int64_t batch = product(llvm::ArrayRef(outShape).drop_back(2));
  bool aBatched = ra > 2, bBatched = rb > 2;
  Tensor out(outShape);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double *A = a.data.data() + (aBatched ? bi * m * k : 0);
    const double *B = b.data.data() + (bBatched ? bi * k * n : 0);
    double *C = out.data.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (ta ? A[p * m + i] : A[i * k + p]) *
                 (tb ? B[j * k + p] : B[p * n + j]);
        C[i * n + j] = acc;
      }
  }
  return out;
}

Tensor linear(const Tensor &x, const Tensor &w, const Tensor *bias,
              const Shape &outShape) {
  int64_t out = w.shape[0], in = w.shape[1];
  int64_t rows = x.numElements() / in;
  Tensor y(outShape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? (*bias)[o] : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += x[r * in + i] * w[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, attention, loss
//===----------------------------------------------------------------------===//

Tensor softmax(const Tensor &x, int64_t axis) {
  int64_t outer, size, inner;
  splitAxis(x.shape, axis, outer, size, inner);
  Tensor y = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t s = 0; s < size; ++s)
        mx = std::max(mx, x[(o * size + s) * inner + i]);
      for (int64_t s = 0; s < size; ++s)
        sum += (y[(o * size + s) * inner + i] =
                    std::exp(x[(o * size + s) * inner + i] - mx));
      for (int64_t s = 0; s < size; ++s)
        y[(o * size + s) * inner + i] /= sum;
    }
  return y;
}

Tensor softmaxGrad(const Tensor &g, const Tensor &y, int64_t axis) {
  int64_t outer, size, inner;
  splitAxis(y.shape, axis, outer, size, inner);
  Tensor dx = y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double dot = 0;
      for (int64_t s = 0; s < size; ++s)
        dot += g[(o * size + s) * inner + i] * y[(o * size + s) * inner + i];
      for (int64_t s = 0; s < size; ++s) {
        int64_t idx = (o * size + s) * inner + i;
        dx[idx] = y[idx] * (g[idx] - dot);
      }
    }
  return dx;
}

/// Row statistics of a norm over the last dimension: mean (0 for RMSNorm)
/// and the inverse scale.
void normStats(const double *row, int64_t d, bool center, double eps,
               double &mean, double &inv) {
  mean = 0;
  if (center) {
    for (int64_t j = 0; j < d; ++j)
      mean += row[j];
    mean /= d;
  }
  double var = 0;
  for (int64_t j = 0; j < d; ++j)
    var += (row[j] - mean) * (row[j] - mean);
  inv = 1.0 / std::sqrt(var / d + eps);
}

Tensor norm(const Tensor &x, const Tensor &w, const Tensor *b, double eps,
            bool center) {
  int64_t d = x.shape.back(), rows = x.numElements() / d;
  Tensor y = x;
  for (int64_t r = 0; r < rows; ++r) {
    double mean, inv;
    normStats(&x.data[r * d], d, center, eps, mean, inv);
    for (int64_t j = 0; j < d; ++j)
      y[r * d + j] = (x[r * d + j] - mean) * inv * w[j] + (b ? (*b)[j] : 0.0);
  }
  return y;
}

/// dx, dw, db of a norm (see rms_norm_grad / layer_norm_grad).
std::vector<Tensor> normGrad(const Tensor &g, const Tensor &x, const Tensor &w,
                             double eps, bool center) {
  int64_t d = x.shape.back(), rows = x.numElements() / d;
  Tensor dx(x.shape), dw(w.shape), db(w.shape);
  std::vector<double> n(d), gw(d);
  for (int64_t r = 0; r < rows; ++r) {
    double mean, inv;
    normStats(&x.data[r * d], d, center, eps, mean, inv);
    double meanG = 0, meanGN = 0;
    for (int64_t j = 0; j < d; ++j) {
      n[j] = (x[r * d + j] - mean) * inv;
      gw[j] = g[r * d + j] * w[j];
      meanG += gw[j];
      meanGN += gw[j] * n[j];
      dw[j] += g[r * d + j] * n[j];
      db[j] += g[r * d + j];
    }
    meanG /= d;
    meanGN /= d;
    for (int64_t j = 0; j < d; ++j)
      dx[r * d + j] = inv * (gw[j] - (center ? meanG : 0.0) - n[j] * meanGN);
  }
  return {dx, dw, db};
}

/// RoPE over the first 2 · |frequencies| dimensions of each head; the rest
/// pass through.
/// RoPE at positions 0..S-1, or at `positions[b, s]` (below `limit`).
Tensor rope(const Tensor &x, ArrayRef<double> frequencies, bool inverse,
            const Tensor *positions = nullptr, int64_t limit = 0) {
  int64_t B = x.shape[0], S = x.shape[1], H = x.shape[2], D = x.shape[3];
  int64_t half = static_cast<int64_t>(frequencies.size());
  Tensor y = x;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < half; ++i) {
        int64_t at = positions ? clampId((*positions)[b * S + s], limit) : s;
        double angle = at * frequencies[i] * (inverse ? -1 : 1);
        double c = std::cos(angle), sn = std::sin(angle);
        for (int64_t h = 0; h < H; ++h) {
          int64_t base = ((b * S + s) * H + h) * D;
          double x1 = x[base + i], x2 = x[base + i + half];
          y[base + i] = x1 * c - x2 * sn;
          y[base + i + half] = x2 * c + x1 * sn;
        }
      }
  return y;
}

/// Which keys a query sees: all; with `causal` those up to its position;
/// with a `window` W too, only the last W of those. A query's position is
/// its index, or `positions[b, i]` (a KV cache's).
struct AttentionMask {
  bool causal = false;
  std::optional<uint64_t> window;
  const Tensor *positions = nullptr;
  bool hides(int64_t i, int64_t j) const {
    return causal && (j > i || (window && j <= i - static_cast<int64_t>(*window)));
  }
  int64_t positionOf(int64_t b, int64_t i, int64_t S) const {
    return positions ? static_cast<int64_t>((*positions)[b * S + i]) : i;
  }
};

/// How a query-key product becomes a score: scaled, then soft-capped
/// (c · tanh(s / c)) where a cap is given.
struct ScoreMap {
  double scale;
  std::optional<double> softcap;
  double operator()(double dot) const {
    double s = dot * scale;
    return softcap ? *softcap * std::tanh(s / *softcap) : s;
  }
  /// d(score)/d(scaled product) at the score s.
  double slope(double s) const {
    if (!softcap)
      return 1.0;
    double t = s / *softcap;
    return 1.0 - t * t;
  }
};

template <typename OpTy>
ScoreMap scoreMapOf(OpTy op) {
  return {op.getScaleOrDefault(), softcapOf(op)};
}

/// Scored, masked products of query position i, head h, batch b with every
/// key (−inf where the mask hides a key).
std::vector<double> attentionScores(const Tensor &q, const Tensor &k, int64_t b,
                                    int64_t i, int64_t h, AttentionMask mask,
                                    ScoreMap score) {
  int64_t S = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  int64_t Skv = k.shape[1], Hkv = k.shape[2], kh = h / (Hq / Hkv);
  std::vector<double> s(Skv, -std::numeric_limits<double>::infinity());
  int64_t at = mask.positionOf(b, i, S);
  for (int64_t j = 0; j < Skv; ++j) {
    if (mask.hides(at, j))
      continue;
    double dot = 0;
    for (int64_t d = 0; d < D; ++d)
      dot += q[((b * S + i) * Hq + h) * D + d] *
             k[((b * Skv + j) * Hkv + kh) * D + d];
    s[j] = score(dot);
  }
  return s;
}

double logSumExp(const std::vector<double> &s) {
  double mx = -std::numeric_limits<double>::infinity();
  for (double x : s)
    mx = std::max(mx, x);
  double sum = 0;
  for (double x : s)
    sum += std::exp(x - mx);
  return mx + std::log(sum);
}

/// Attention's output and per-row logsumexp ([B, S, Hq]).
std::pair<Tensor, Tensor> attention(const Tensor &q, const Tensor &k,
                                    const Tensor &v, AttentionMask mask,
                                    ScoreMap score, const Shape &outShape) {
  int64_t B = q.shape[0], S = q.shape[1], Hq = q.shape[2];
  int64_t Skv = k.shape[1], Hkv = k.shape[2], Dv = v.shape[3];
  Tensor out(outShape), lse({B, S, Hq});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t h = 0; h < Hq; ++h) {
        std::vector<double> s = attentionScores(q, k, b, i, h, mask, score);
        double rowLse = logSumExp(s);
        lse[(b * S + i) * Hq + h] = rowLse;
        int64_t kh = h / (Hq / Hkv);
        for (int64_t j = 0; j < Skv; ++j)
          for (int64_t d = 0; d < Dv; ++d)
            out[((b * S + i) * Hq + h) * Dv + d] +=
                std::exp(s[j] - rowLse) *
                v[((b * Skv + j) * Hkv + kh) * Dv + d];
      }
  return {std::move(out), std::move(lse)};
}

/// The probabilities come from the given logsumexp, as the compiled
/// gradient recomputes them.
std::vector<Tensor> attentionGrad(const Tensor &dO, const Tensor &q,
                                  const Tensor &k, const Tensor &v,
                                  const Tensor &o, const Tensor &lse,
                                  AttentionMask mask, ScoreMap score) {
  int64_t B = q.shape[0], S = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  int64_t Skv = k.shape[1], Hkv = k.shape[2], Dv = v.shape[3];
  Tensor dq(q.shape), dk(k.shape), dv(v.shape);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t h = 0; h < Hq; ++h) {
        std::vector<double> s = attentionScores(q, k, b, i, h, mask, score);
        int64_t kh = h / (Hq / Hkv);
        int64_t qi = ((b * S + i) * Hq + h);
        std::vector<double> p(s.size());
        for (size_t j = 0; j < s.size(); ++j)
          p[j] = std::exp(s[j] - lse[qi]);
        double delta = 0;
        for (int64_t d = 0; d < Dv; ++d)
          delta += dO[qi * Dv + d] * o[qi * Dv + d];
        for (int64_t j = 0; j < Skv; ++j) {
          int64_t kj = (b * Skv + j) * Hkv + kh;
          double dp = 0;
          for (int64_t d = 0; d < Dv; ++d) {
            dp += dO[qi * Dv + d] * v[kj * Dv + d];
            dv[kj * Dv + d] += p[j] * dO[qi * Dv + d];
          }
          if (p[j] == 0.0)
            continue;
          double ds = p[j] * (dp - delta) * score.scale * score.slope(s[j]);
          for (int64_t d = 0; d < D; ++d) {
            dq[qi * D + d] += ds * k[kj * D + d];
            dk[kj * D + d] += ds * q[qi * D + d];
          }
        }
      }
  return {dq, dk, dv};
}

/// Mean cross-entropy, or (with `grad`) its gradient scaled by `*grad`.
/// With a `softcap` c the logits are capped (c · tanh(x / c)) first and the
/// gradient is the capped logits' times the cap's slope.
Tensor crossEntropy(const Tensor &rawLogits, const Tensor &targets,
                    std::optional<int64_t> ignore, const double *grad,
                    std::optional<double> softcap) {
  ScoreMap cap{1.0, softcap};
  Tensor logits = rawLogits;
  for (double &x : logits.data)
    x = cap(x);
  int64_t V = logits.shape.back(), rows = logits.numElements() / V;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r)
    count += !(ignore && static_cast<int64_t>(targets[r]) == *ignore);
  Tensor result = grad ? Tensor(logits.shape) : Tensor({}, 0.0);
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = static_cast<int64_t>(targets[r]);
    if (ignore && t == *ignore)
      continue;
    const double *row = &logits.data[r * V];
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < V; ++j)
      mx = std::max(mx, row[j]);
    for (int64_t j = 0; j < V; ++j)
      sum += std::exp(row[j] - mx);
    t = clampId(t, V);
    if (!grad) {
      total += std::log(sum) + mx - row[t];
      continue;
    }
    for (int64_t j = 0; j < V; ++j)
      result[r * V + j] = *grad *
                          (std::exp(row[j] - mx) / sum - (j == t ? 1.0 : 0.0)) /
                          count * cap.slope(row[j]);
  }
  if (!grad)
    result[0] = total / count;
  return result;
}

/// The logits of the fused vocabulary projection, [rows..., V].
Tensor fusedLogits(const Tensor &x, const Tensor &w, const Tensor *bias) {
  Shape shape = x.shape;
  shape.back() = w.shape[0];
  return linear(x, w, bias, shape);
}

/// Gradients of cross_entropy(linear(x, w, b)): dx, dw and (with a bias) db.
std::vector<Tensor> linearCrossEntropyGrad(double g, const Tensor &x,
                                           const Tensor &w, const Tensor *bias,
                                           const Tensor &targets,
                                           std::optional<int64_t> ignore,
                                           std::optional<double> softcap) {
  Tensor dlogits =
      crossEntropy(fusedLogits(x, w, bias), targets, ignore, &g, softcap);
  int64_t V = w.shape[0], D = w.shape[1], rows = x.numElements() / D;
  Tensor dx(x.shape), dw(w.shape), db({V});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < V; ++v) {
      double d = dlogits[r * V + v];
      if (d == 0.0)
        continue;
      for (int64_t k = 0; k < D; ++k) {
        dx[r * D + k] += d * w[v * D + k];
        dw[v * D + k] += d * x[r * D + k];
      }
      db[v] += d;
    }
  std::vector<Tensor> grads{std::move(dx), std::move(dw)};
  if (bias)
    grads.push_back(std::move(db));
  return grads;
}

//===----------------------------------------------------------------------===//
// The interpreter loop
//===----------------------------------------------------------------------===//

Tensor fromAttr(ElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  Tensor t(Shape(type.getShape().begin(), type.getShape().end()));
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return t;
  int64_t i = 0;
  if (llvm::isa<FloatType>(type.getElementType())) {
    for (APFloat v : dense.getValues<APFloat>())
      t[i++] = v.convertToDouble();
  } else {
    for (APInt v : dense.getValues<APInt>())
      t[i++] = static_cast<double>(v.getSExtValue());
  }
  return t;
}

class Interpreter {
public:
  explicit Interpreter(const InterpretOptions &options) : options(options) {}

  llvm::Expected<std::vector<Tensor>> run(func::FuncOp func,
                                          const std::vector<Tensor> &args) {
    if (args.size() != func.getNumArguments())
      return error(func, llvm::formatv("expects {0} arguments, got {1}",
                                       func.getNumArguments(), args.size()));
    for (auto [arg, value] : llvm::zip(func.getArguments(), args)) {
      if (shapeOf(arg) != value.shape)
        return error(func, llvm::formatv("argument #{0} has the wrong shape",
                                         arg.getArgNumber()));
      values[arg] = value;
    }
    for (Operation &op : func.getBody().front()) {
      if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
        std::vector<Tensor> results;
        for (Value v : ret.getOperands())
          results.push_back(values[v]);
        return results;
      }
      if (llvm::Error err = step(&op))
        return std::move(err);
    }
    return error(func, "has no return");
  }

private:
  llvm::Error error(Operation *op, const llvm::Twine &message) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "reference interpreter: '" << op->getName() << "' at " << op->getLoc()
       << ": " << message;
    return llvm::createStringError(s);
  }

  const Tensor &in(Value v) { return values[v]; }
  /// Values of bf16/f16 type are rounded to it (nearest even), so the
  /// oracle rounds exactly where compiled mixed-precision code does; f32
  /// values too with `storeF32`.
  void set(Value v, Tensor t) {
    auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (type && options.storeF32 && type.getElementType().isF32()) {
      for (int64_t i = 0; i < t.numElements(); ++i)
        t[i] = static_cast<double>(static_cast<float>(t[i]));
    } else if (type && isLowPrecisionFloat(type.getElementType())) {
      const llvm::fltSemantics &sem =
          llvm::cast<FloatType>(type.getElementType()).getFloatSemantics();
      for (int64_t i = 0; i < t.numElements(); ++i) {
        bool lost;
        llvm::APFloat x(t[i]);
        x.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
        t[i] = x.convertToDouble();
      }
    }
    values[v] = std::move(t);
  }

  llvm::Error step(Operation *op) {
    bool handled = true;
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](ConstantOp o) { set(o, fromAttr(o.getValue())); })
        .Case([&](ReshapeOp o) {
          Tensor t = in(o.getInput());
          t.shape = shapeOf(o);
          set(o, std::move(t));
        })
        .Case([&](CastOp o) { set(o, in(o.getInput())); })
        .Case([&](TransposeOp o) {
          set(o, transpose(in(o.getInput()), o.getPermutation()));
        })
        .Case([&](BroadcastOp o) {
          set(o, broadcastTo(in(o.getInput()), shapeOf(o)));
        })
        .Case([&](ReduceSumOp o) {
          set(o, reduceSum(in(o.getInput()), o.getDims(), shapeOf(o)));
        })
        .Case([&](SliceOp o) {
          set(o, sliceAxis(in(o.getInput()), o.getAxis(), o.getStart(),
                           o.getSize()));
        })
        .Case([&](PadOp o) {
          set(o,
              padAxis(in(o.getInput()), o.getAxis(), o.getLow(), o.getHigh()));
        })
        .Case([&](MatmulOp o) {
          set(o, matmul(in(o.getLhs()), in(o.getRhs()), o.getTransposeLhs(),
                        o.getTransposeRhs(), shapeOf(o)));
        })
        .Case([&](LinearOp o) {
          set(o, linear(in(o.getInput()), in(o.getWeight()),
                        o.getBias() ? &in(o.getBias()) : nullptr, shapeOf(o)));
        })
        .Case([&](AddOp o) {
          set(o, zip(in(o.getLhs()), in(o.getRhs()), shapeOf(o),
                     [](double a, double b) { return a + b; }));
        })
        .Case([&](SubOp o) {
          set(o, zip(in(o.getLhs()), in(o.getRhs()), shapeOf(o),
                     [](double a, double b) { return a - b; }));
        })
        .Case([&](MulOp o) {
          set(o, zip(in(o.getLhs()), in(o.getRhs()), shapeOf(o),
                     [](double a, double b) { return a * b; }));
        })
        .Case([&](ScaleOp o) {
          double f = o.getFactor().convertToDouble();
          set(o, map(in(o.getInput()), [&](double x) { return f * x; }));
        })
        .Case([&](ReluOp o) {
          set(o,
              map(in(o.getInput()), [](double x) { return x > 0 ? x : 0.0; }));
        })
        .Case([&](GeluOp o) {
          bool t = o.getApproximate() == "tanh";
          set(o, map(in(o.getInput()), [&](double x) { return gelu(x, t); }));
        })
        .Case([&](SiluOp o) {
          set(o,
              map(in(o.getInput()), [](double x) { return x * sigmoid(x); }));
        })
        .Case([&](SigmoidOp o) {
          set(o, map(in(o.getInput()), [](double x) { return sigmoid(x); }));
        })
        .Case([&](SoftmaxOp o) {
          int64_t rank = o.getType().getRank(), axis = o.getAxis();
          set(o, softmax(in(o.getInput()), axis < 0 ? axis + rank : axis));
        })
        .Case([&](EmbeddingOp o) {
          const Tensor &table = in(o.getTable()), &ids = in(o.getIndices());
          int64_t V = table.shape[0], D = table.shape[1];
          Tensor out(shapeOf(o));
          for (int64_t p = 0; p < ids.numElements(); ++p) {
            int64_t row = clampId(ids[p], V);
            for (int64_t d = 0; d < D; ++d)
              out[p * D + d] = table[row * D + d];
          }
          set(o, std::move(out));
        })
        .Case([&](RMSNormOp o) {
          set(o, norm(in(o.getInput()), in(o.getWeight()), nullptr,
                      o.getEps().convertToDouble(), /*center=*/false));
        })
        .Case([&](LayerNormOp o) {
          set(o, norm(in(o.getInput()), in(o.getWeight()),
                      o.getBias() ? &in(o.getBias()) : nullptr,
                      o.getEps().convertToDouble(), /*center=*/true));
        })
        .Case([&](RopeOp o) {
          set(o, rope(in(o.getInput()), o.getInverseFrequencies(),
                      o.getInverse(),
                      o.getPositions() ? &in(o.getPositions()) : nullptr,
                      o.getMaxPosition().value_or(0)));
        })
        .Case([&](AttentionOp o) {
          auto [out, lse] = attention(
              in(o.getQuery()), in(o.getKey()), in(o.getValue()),
              AttentionMask{o.getCausal(), o.getWindow(),
                            o.getPositions() ? &in(o.getPositions())
                                             : nullptr},
              scoreMapOf(o), shapeOf(o.getResult()));
          set(o.getResult(), std::move(out));
          set(o.getLogsumexp(), std::move(lse));
        })
        .Case([&](CacheUpdateOp o) {
          Tensor out = in(o.getCache());
          const Tensor &rows = in(o.getRows()), &positions = in(o.getPositions());
          int64_t B = rows.shape[0], S = rows.shape[1];
          int64_t L = out.shape[1], row = rows.shape[2] * rows.shape[3];
          for (int64_t b = 0; b < B; ++b)
            for (int64_t s = 0; s < S; ++s) {
              int64_t at = clampId(positions[b * S + s], L);
              for (int64_t e = 0; e < row; ++e)
                out[(b * L + at) * row + e] = rows[(b * S + s) * row + e];
            }
          set(o, std::move(out));
        })
        .Case([&](CrossEntropyOp o) {
          set(o, crossEntropy(in(o.getLogits()), in(o.getTargets()),
                              o.getIgnoreIndex(), nullptr, softcapOf(o)));
        })
        .Case([&](LinearCrossEntropyOp o) {
          const Tensor *bias = o.getBias() ? &in(o.getBias()) : nullptr;
          Tensor logits =
              fusedLogits(in(o.getInput()), in(o.getWeight()), bias);
          set(o.getResult(),
              crossEntropy(logits, in(o.getTargets()), o.getIgnoreIndex(),
                           nullptr, softcapOf(o)));
          std::vector<Tensor> g = linearCrossEntropyGrad(
              1.0, in(o.getInput()), in(o.getWeight()), bias,
              in(o.getTargets()), o.getIgnoreIndex(), softcapOf(o));
          set(o.getInputGrad(), std::move(g[0]));
          set(o.getWeightGrad(), std::move(g[1]));
          if (bias)
            set(o.getBiasGrad(), std::move(g[2]));
        })
        .Case([&](RouteOp o) {
          tgc::ref::Routing r =
              tgc::ref::route(in(o.getLogits()), o.getTopK(), o.getNormalize());
          set(o.getWeights(), std::move(r.weights));
          set(o.getExperts(), std::move(r.experts));
        })
        .Case([&](ExpertDispatchOp o) {
          tgc::ref::Dispatch d =
              tgc::ref::expertDispatch(in(o.getExperts()), o.getNumExperts());
          set(o.getRows(), std::move(d.rows));
          set(o.getPositions(), std::move(d.positions));
          set(o.getOffsets(), std::move(d.offsets));
        })
        .Case([&](ExpertCountsOp o) {
          Tensor counts(shapeOf(o));
          tgc::ref::Dispatch d =
              tgc::ref::expertDispatch(in(o.getExperts()), o.getNumExperts());
          for (int64_t e = 0; e < counts.numElements(); ++e)
            counts[e] = d.offsets[e + 1] - d.offsets[e];
          set(o, std::move(counts));
        })
        .Case([&](GroupedMatmulOp o) {
          std::vector<const Tensor *> weights;
          for (Value w : o.getWeights())
            weights.push_back(&in(w));
          set(o, tgc::ref::groupedMatmul(in(o.getInput()), in(o.getOffsets()),
                                         weights, o.getTransposeWeights(),
                                         shapeOf(o)));
        })
        // Reverse graph.
        .Case([&](EmbeddingGradOp o) {
          const Tensor &g = in(o.getGrad()), &ids = in(o.getIndices());
          Tensor out(shapeOf(o));
          int64_t V = out.shape[0], D = out.shape[1];
          for (int64_t p = 0; p < ids.numElements(); ++p) {
            int64_t row = clampId(ids[p], V);
            for (int64_t d = 0; d < D; ++d)
              out[row * D + d] += g[p * D + d];
          }
          set(o, std::move(out));
        })
        .Case([&](RouteGradOp o) {
          set(o, tgc::ref::routeGrad(in(o.getGrad()), in(o.getLogits()),
                                     in(o.getExperts()), o.getNormalize()));
        })
        .Case([&](GroupedWeightGradOp o) {
          std::vector<Tensor> g = tgc::ref::groupedWeightGrad(
              in(o.getLhs()), in(o.getRhs()), in(o.getOffsets()));
          for (auto [r, t] : llvm::zip(o.getResults(), g))
            set(r, std::move(t));
        })
        .Case([&](ReluGradOp o) {
          set(o, zip(in(o.getGrad()), in(o.getSaved()), shapeOf(o),
                     [](double g, double y) { return y > 0 ? g : 0.0; }));
        })
        .Case([&](GeluGradOp o) {
          bool t = o.getApproximate() == "tanh";
          set(o, zip(in(o.getGrad()), in(o.getSaved()), shapeOf(o),
                     [&](double g, double x) {
                       return g * geluDerivative(x, t);
                     }));
        })
        .Case([&](SigmoidGradOp o) {
          set(o, zip(in(o.getGrad()), in(o.getSaved()), shapeOf(o),
                     [](double g, double s) { return g * s * (1.0 - s); }));
        })
        .Case([&](SiluGradOp o) {
          set(o, zip(in(o.getGrad()), in(o.getSaved()), shapeOf(o),
                     [](double g, double x) {
                       double s = sigmoid(x);
                       return g * s * (1.0 + x * (1.0 - s));
                     }));
        })
        .Case([&](SoftmaxGradOp o) {
          int64_t rank = o.getType().getRank(), axis = o.getAxis();
          set(o, softmaxGrad(in(o.getGrad()), in(o.getOutput()),
                             axis < 0 ? axis + rank : axis));
        })
        .Case([&](RMSNormGradOp o) {
          auto g =
              normGrad(in(o.getGrad()), in(o.getInput()), in(o.getWeight()),
                       o.getEps().convertToDouble(), false);
          set(o.getInputGrad(), g[0]);
          set(o.getWeightGrad(), g[1]);
        })
        .Case([&](LayerNormGradOp o) {
          auto g =
              normGrad(in(o.getGrad()), in(o.getInput()), in(o.getWeight()),
                       o.getEps().convertToDouble(), true);
          set(o.getInputGrad(), g[0]);
          set(o.getWeightGrad(), g[1]);
          set(o.getBiasGrad(), g[2]);
        })
        .Case([&](AttentionGradOp o) {
          auto g = attentionGrad(in(o.getGrad()), in(o.getQuery()),
                                 in(o.getKey()), in(o.getValue()),
                                 in(o.getOutput()), in(o.getLogsumexp()),
                                 AttentionMask{o.getCausal(), o.getWindow()},
                                 scoreMapOf(o));
          set(o.getQueryGrad(), g[0]);
          set(o.getKeyGrad(), g[1]);
          set(o.getValueGrad(), g[2]);
        })
        .Case([&](CrossEntropyGradOp o) {
          double g = in(o.getGrad())[0];
          set(o, crossEntropy(in(o.getLogits()), in(o.getTargets()),
                              o.getIgnoreIndex(), &g, softcapOf(o)));
        })
        // Optimizer.
        .Case([&](SumSquaresOp o) {
          double sum = 0;
          for (double x : in(o.getInput()).data)
            sum += x * x;
          set(o, Tensor({}, sum));
        })
        .Case([&](GlobalNormOp o) {
          double sum = 0;
          for (Value v : o.getSums())
            sum += in(v)[0];
          set(o, Tensor({}, std::sqrt(sum)));
        })
        // Communication: one process, so the weighted sum is weight · input.
        .Case([&](AllReduceStartOp o) {
          double w = in(o.getWeight())[0];
          for (auto [input, result] :
               llvm::zip(o.getInputs(), o.getResults())) {
            Tensor out = in(input);
            for (double &x : out.data)
              x *= w;
            set(result, out);
          }
          set(o.getRequest(), Tensor({}, 0.0));
        })
        .Case([&](CollectiveWaitOp o) {
          for (auto [input, result] : llvm::zip(o.getInputs(), o.getResults()))
            set(result, in(input));
        })
        .Case([&](ClipFactorOp o) {
          double n = in(o.getNorm())[0], c = o.getMaxNorm().convertToDouble();
          set(o, Tensor({}, std::min(1.0, c / (n + 1e-6))));
        })
        .Case([&](NotFiniteOp o) {
          set(o, Tensor({}, std::isfinite(in(o.getInput())[0]) ? 0.0 : 1.0));
        })
        .Case([&](LossScaleUpdateOp o) {
          double scale = in(o.getScale())[0],
                 tracker = in(o.getGrowthTracker())[0],
                 norm = in(o.getScaledNorm())[0];
          int64_t interval = o.getGrowthInterval();
          bool overflow = !std::isfinite(norm);
          double next = tracker + 1;
          if (interval > 0 && next >= interval) {
            next = 0;
            scale *= 2;
          }
          if (overflow) {
            next = 0;
            scale =
                interval > 0 ? in(o.getScale())[0] * 0.5 : in(o.getScale())[0];
          }
          set(o.getInverseScale(), Tensor({}, 1.0 / in(o.getScale())[0]));
          set(o.getSkip(), Tensor({}, overflow ? 1.0 : 0.0));
          set(o.getNewScale(), Tensor({}, scale));
          set(o.getNewGrowthTracker(), Tensor({}, next));
        })
        .Case([&](SGDUpdateOp o) {
          const Tensor &p = in(o.getParam()), &g = in(o.getGrad());
          double lr = in(o.getLr())[0],
                 wd = o.getWeightDecay().convertToDouble();
          Tensor out = p;
          if (!skipped(o.getSkip()))
            for (int64_t i = 0; i < p.numElements(); ++i)
              out[i] = p[i] - lr * (g[i] + wd * p[i]);
          set(o, std::move(out));
        })
        .Case([&](SGDMomentumUpdateOp o) {
          const Tensor &p = in(o.getParam()), &g = in(o.getGrad()),
                       &buf = in(o.getMomentumBuffer());
          double lr = in(o.getLr())[0], t = in(o.getStep())[0];
          double mu = o.getMomentum().convertToDouble(),
                 wd = o.getWeightDecay().convertToDouble();
          Tensor np = p, nb = buf;
          for (int64_t i = 0; !skipped(o.getSkip()) && i < p.numElements();
               ++i) {
            double d = g[i] + wd * p[i];
            nb[i] = t <= 1.0 ? d : mu * buf[i] + d;
            np[i] = p[i] - lr * nb[i];
          }
          set(o.getNewParam(), std::move(np));
          set(o.getNewMomentumBuffer(), std::move(nb));
        })
        .Case([&](AdamWUpdateOp o) {
          const Tensor &p = in(o.getParam()), &g = in(o.getGrad()),
                       &m = in(o.getExpAvg()), &v = in(o.getExpAvgSq());
          double lr = in(o.getLr())[0], t = in(o.getStep())[0];
          double b1 = o.getBeta1().convertToDouble(),
                 b2 = o.getBeta2().convertToDouble();
          double eps = o.getEps().convertToDouble(),
                 wd = o.getWeightDecay().convertToDouble();
          double bc1 = 1.0 - std::pow(b1, t), bc2 = 1.0 - std::pow(b2, t);
          Tensor np = p, nm = m, nv = v;
          for (int64_t i = 0; !skipped(o.getSkip()) && i < p.numElements();
               ++i) {
            nm[i] = b1 * m[i] + (1 - b1) * g[i];
            nv[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            double decayed = p[i] * (1 - lr * wd);
            np[i] = decayed - (lr / bc1) * nm[i] /
                                  (std::sqrt(nv[i]) / std::sqrt(bc2) + eps);
          }
          set(o.getNewParam(), std::move(np));
          set(o.getNewExpAvg(), std::move(nm));
          set(o.getNewExpAvgSq(), std::move(nv));
        })
        .Default([&](Operation *) { handled = false; });
    if (!handled)
      return error(op, "the reference interpreter does not know this op");
    return llvm::Error::success();
  }

  /// Whether an update's optional skip flag is set.
  bool skipped(Value skip) { return skip && in(skip)[0] != 0.0; }

  const InterpretOptions &options;
  llvm::DenseMap<Value, Tensor> values;
};

} // namespace

llvm::Expected<std::vector<Tensor>>
tgc::ref::interpret(func::FuncOp func, const std::vector<Tensor> &args,
                    const InterpretOptions &options) {
  return Interpreter(options).run(func, args);
}
