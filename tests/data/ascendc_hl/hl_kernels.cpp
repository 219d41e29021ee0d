// Kernels of the high-level library in kernel-launch style (written for opsdk's tests): each
// block copies its rows in, runs one high-level API on them with a sharedTmpBuffer of the size
// the host tiling chose, and copies the results out.
#include "kernel_operator.h"
#include "hl_tiling.h"

using namespace AscendC;

template <typename T>
class HlKernel {
public:
    __aicore__ inline HlKernel(const optiling::HlTiling& t) : t_(t), n_(t.rowsPerBlock * t.cols) {}

    __aicore__ inline void InitIn(GlobalTensor<T>& g, GM_ADDR p, uint32_t perBlock) {
        g.SetGlobalBuffer((__gm__ T*)p + GetBlockIdx() * perBlock, perBlock);
    }
    __aicore__ inline void Init() {
        pipe_.InitBuffer(inQ_, 1, n_ * sizeof(T));
        pipe_.InitBuffer(outQ_, 1, n_ * sizeof(T));
        pipe_.InitBuffer(rowQ_, 1, t_.rowsPerBlock * 32 * 3);
        pipe_.InitBuffer(tmp_, t_.tmpBytes);
    }
    // rows in, into a VECIN tensor
    __aicore__ inline LocalTensor<T> In(GlobalTensor<T>& g) {
        LocalTensor<T> x = inQ_.AllocTensor<T>();
        DataCopy(x, g, n_);
        inQ_.EnQue(x);
        return inQ_.DeQue<T>();
    }
    // a small GM vector (per-row blocks, gamma, beta) into a VECCALC buffer, waited for
    template <typename U>
    __aicore__ inline void Load(const LocalTensor<U>& dst, GlobalTensor<U>& g, uint32_t count) {
        DataCopy(dst, g, count);
        event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));
        SetFlag<HardEvent::MTE2_V>(e);
        WaitFlag<HardEvent::MTE2_V>(e);
    }
    template <typename U>
    __aicore__ inline void Store(GlobalTensor<U>& g, const LocalTensor<U>& src, uint32_t count) {
        event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
        SetFlag<HardEvent::V_MTE3>(e);
        WaitFlag<HardEvent::V_MTE3>(e);
        DataCopy(g, src, count);
    }
    __aicore__ inline void Out(GlobalTensor<T>& g, LocalTensor<T>& y, LocalTensor<T>& x) {
        outQ_.EnQue(y);
        inQ_.FreeTensor(x);
        LocalTensor<T> z = outQ_.DeQue<T>();
        DataCopy(g, z, n_);
        outQ_.FreeTensor(z);
    }

    const optiling::HlTiling& t_;
    uint32_t n_;
    TPipe pipe_;
    TQue<TPosition::VECIN, 1> inQ_;
    TQue<TPosition::VECOUT, 1> outQ_;
    TQue<TPosition::VECCALC, 1> rowQ_;
    TBuf<TPosition::VECCALC> tmp_;
};

template <typename T>
__aicore__ inline void SoftmaxRun(GM_ADDR x, GM_ADDR y, GM_ADDR sum, GM_ADDR max, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<T> k(t);
    GlobalTensor<T> xg, yg, sg, mg;
    const uint32_t rowElems = 32 / sizeof(T);
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    k.InitIn(sg, sum, t.rowsPerBlock * rowElems);
    k.InitIn(mg, max, t.rowsPerBlock * rowElems);
    k.Init();
    LocalTensor<T> xl = k.In(xg);
    LocalTensor<T> yl = k.outQ_.template AllocTensor<T>();
    LocalTensor<T> rows = k.rowQ_.template AllocTensor<T>();
    LocalTensor<T> sl = rows, ml = rows[t.rowsPerBlock * rowElems];
    LocalTensor<uint8_t> tmp = k.tmp_.template Get<uint8_t>();
    SoftMaxShapeInfo shape = {t.rowsPerBlock, t.cols, t.rowsPerBlock, t.cols};
    SoftMax<T>(yl, sl, ml, xl, tmp, t.softmaxTiling, shape);
    k.Store(sg, sl, t.rowsPerBlock * rowElems);
    k.Store(mg, ml, t.rowsPerBlock * rowElems);
    k.rowQ_.FreeTensor(rows);
    k.Out(yg, yl, xl);
}

extern "C" __global__ __aicore__ void softmax_float(GM_ADDR x, GM_ADDR y, GM_ADDR sum, GM_ADDR max,
                                                    GM_ADDR workspace, GM_ADDR tiling) {
    SoftmaxRun<float>(x, y, sum, max, tiling);
}
extern "C" __global__ __aicore__ void softmax_half(GM_ADDR x, GM_ADDR y, GM_ADDR sum, GM_ADDR max,
                                                   GM_ADDR workspace, GM_ADDR tiling) {
    SoftmaxRun<half>(x, y, sum, max, tiling);
}

// SimpleSoftMax with the row sum and max a first pass (SoftMax) gave, on the same rows
extern "C" __global__ __aicore__ void simple_softmax_float(GM_ADDR x, GM_ADDR insum, GM_ADDR inmax, GM_ADDR y,
                                                           GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<float> k(t);
    GlobalTensor<float> xg, yg, sg, mg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    k.InitIn(sg, insum, t.rowsPerBlock * 8);
    k.InitIn(mg, inmax, t.rowsPerBlock * 8);
    k.Init();
    LocalTensor<float> rows = k.rowQ_.AllocTensor<float>();
    LocalTensor<float> sl = rows, ml = rows[t.rowsPerBlock * 8];
    k.Load(sl, sg, t.rowsPerBlock * 8);
    k.Load(ml, mg, t.rowsPerBlock * 8);
    LocalTensor<float> xl = k.In(xg);
    LocalTensor<float> yl = k.outQ_.AllocTensor<float>();
    SoftMaxShapeInfo shape = {t.rowsPerBlock, t.cols, t.rowsPerBlock, t.cols};
    SimpleSoftMax<float>(yl, sl, ml, xl, k.tmp_.Get<uint8_t>(), t.softmaxTiling, shape);
    k.rowQ_.FreeTensor(rows);
    k.Out(yg, yl, xl);
}

// SoftmaxFlashV2 with isUpdate: the running max and sum of earlier blocks in, updated out
template <typename T>
__aicore__ inline void FlashRun(GM_ADDR x, GM_ADDR inmax, GM_ADDR insum, GM_ADDR y, GM_ADDR max, GM_ADDR sum,
                                GM_ADDR expmax, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<T> k(t);
    const uint32_t r = t.rowsPerBlock * 32 / sizeof(T);
    GlobalTensor<T> xg, yg, img, isg, mg, sg, eg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    k.InitIn(img, inmax, r);
    k.InitIn(isg, insum, r);
    k.InitIn(mg, max, r);
    k.InitIn(sg, sum, r);
    k.InitIn(eg, expmax, r);
    k.pipe_.InitBuffer(k.inQ_, 1, k.n_ * sizeof(T));
    k.pipe_.InitBuffer(k.outQ_, 1, k.n_ * sizeof(T));
    k.pipe_.InitBuffer(k.rowQ_, 1, r * sizeof(T) * 5);
    k.pipe_.InitBuffer(k.tmp_, t.tmpBytes);
    LocalTensor<T> rows = k.rowQ_.template AllocTensor<T>();
    LocalTensor<T> iml = rows, isl = rows[r], ml = rows[2 * r], sl = rows[3 * r], el = rows[4 * r];
    k.Load(iml, img, r);
    k.Load(isl, isg, r);
    LocalTensor<T> xl = k.In(xg);
    LocalTensor<T> yl = k.outQ_.template AllocTensor<T>();
    SoftMaxShapeInfo shape = {t.rowsPerBlock, t.cols, t.rowsPerBlock, t.cols};
    SoftmaxFlashV2<T, true>(yl, sl, ml, xl, el, isl, iml, k.tmp_.template Get<uint8_t>(), t.softmaxTiling, shape);
    k.Store(mg, ml, r);
    k.Store(sg, sl, r);
    k.Store(eg, el, r);
    k.rowQ_.FreeTensor(rows);
    k.Out(yg, yl, xl);
}
extern "C" __global__ __aicore__ void flash_float(GM_ADDR x, GM_ADDR inmax, GM_ADDR insum, GM_ADDR y, GM_ADDR max,
                                                  GM_ADDR sum, GM_ADDR expmax, GM_ADDR workspace, GM_ADDR tiling) {
    FlashRun<float>(x, inmax, insum, y, max, sum, expmax, tiling);
}
extern "C" __global__ __aicore__ void flash_half(GM_ADDR x, GM_ADDR inmax, GM_ADDR insum, GM_ADDR y, GM_ADDR max,
                                                 GM_ADDR sum, GM_ADDR expmax, GM_ADDR workspace, GM_ADDR tiling) {
    FlashRun<half>(x, inmax, insum, y, max, sum, expmax, tiling);
}

extern "C" __global__ __aicore__ void log_softmax_float(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<float> k(t);
    GlobalTensor<float> xg, yg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    k.Init();
    LocalTensor<float> xl = k.In(xg);
    LocalTensor<float> yl = k.outQ_.AllocTensor<float>();
    LocalTensor<float> rows = k.rowQ_.AllocTensor<float>();
    LogSoftMaxTiling log;
    std::memcpy(static_cast<void*>(&log), &t.softmaxTiling, sizeof(log));
    SoftMaxShapeInfo shape = {t.rowsPerBlock, t.cols, t.rowsPerBlock, t.cols};
    LogSoftMax<float>(yl, rows, rows[t.rowsPerBlock * 8], xl, k.tmp_.Get<uint8_t>(), log, shape);
    k.rowQ_.FreeTensor(rows);
    k.Out(yg, yl, xl);
}

template <typename T>
__aicore__ inline void RmsNormRun(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<T> k(t);
    GlobalTensor<T> xg, yg, gg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    gg.SetGlobalBuffer((__gm__ T*)gamma, t.cols);
    k.Init();
    LocalTensor<T> g = k.rowQ_.template AllocTensor<T>();
    k.Load(g, gg, t.cols);
    LocalTensor<T> xl = k.In(xg);
    LocalTensor<T> yl = k.outQ_.template AllocTensor<T>();
    RmsNorm<T>(yl, xl, g, k.tmp_.template Get<uint8_t>(), static_cast<T>(t.epsilon), t.rmsnormTiling);
    k.rowQ_.FreeTensor(g);
    k.Out(yg, yl, xl);
}
extern "C" __global__ __aicore__ void rmsnorm_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR workspace,
                                                    GM_ADDR tiling) {
    RmsNormRun<float>(x, gamma, y, tiling);
}
extern "C" __global__ __aicore__ void rmsnorm_half(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR workspace,
                                                   GM_ADDR tiling) {
    RmsNormRun<half>(x, gamma, y, tiling);
}

template <typename T>
__aicore__ inline void LayerNormRun(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR var,
                                    GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<T> k(t);
    GlobalTensor<T> xg, yg, gg, bg, mg, vg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, k.n_);
    k.InitIn(mg, mean, t.rowsPerBlock);
    k.InitIn(vg, var, t.rowsPerBlock);
    gg.SetGlobalBuffer((__gm__ T*)gamma, t.cols);
    bg.SetGlobalBuffer((__gm__ T*)beta, t.cols);
    k.pipe_.InitBuffer(k.inQ_, 1, k.n_ * sizeof(T));
    k.pipe_.InitBuffer(k.outQ_, 1, k.n_ * sizeof(T));
    k.pipe_.InitBuffer(k.rowQ_, 1, (2 * t.cols + 2 * t.rowsPerBlock) * sizeof(T));
    k.pipe_.InitBuffer(k.tmp_, t.tmpBytes);
    LocalTensor<T> p = k.rowQ_.template AllocTensor<T>();
    LocalTensor<T> g = p, b = p[t.cols], ml = p[2 * t.cols], vl = p[2 * t.cols + t.rowsPerBlock];
    k.Load(g, gg, t.cols);
    k.Load(b, bg, t.cols);
    LocalTensor<T> xl = k.In(xg);
    LocalTensor<T> yl = k.outQ_.template AllocTensor<T>();
    LayerNorm<T>(yl, ml, vl, xl, g, b, k.tmp_.template Get<uint8_t>(), static_cast<T>(t.epsilon), t.layernormTiling);
    k.Store(mg, ml, t.rowsPerBlock);
    k.Store(vg, vl, t.rowsPerBlock);
    k.rowQ_.FreeTensor(p);
    k.Out(yg, yl, xl);
}
extern "C" __global__ __aicore__ void layernorm_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                      GM_ADDR mean, GM_ADDR var, GM_ADDR workspace, GM_ADDR tiling) {
    LayerNormRun<float>(x, gamma, beta, y, mean, var, tiling);
}
extern "C" __global__ __aicore__ void layernorm_half(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                     GM_ADDR mean, GM_ADDR var, GM_ADDR workspace, GM_ADDR tiling) {
    LayerNormRun<half>(x, gamma, beta, y, mean, var, tiling);
}

// SoftMax on rows copied into a TBuf with no MTE2 -> V flag: a race the checker must report
extern "C" __global__ __aicore__ void softmax_racy(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> in, out, tmp;
    const uint32_t n = t.rowsPerBlock * t.cols;
    pipe.InitBuffer(in, n * sizeof(float));
    pipe.InitBuffer(out, n * sizeof(float));
    pipe.InitBuffer(tmp, t.tmpBytes);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * n, n);
    LocalTensor<float> xl = in.Get<float>(), yl = out.Get<float>();
    DataCopy(xl, xg, n);
    SoftMaxShapeInfo shape = {t.rowsPerBlock, t.cols, t.rowsPerBlock, t.cols};
    SoftMax<float>(yl, xl, tmp.Get<uint8_t>(), t.softmaxTiling, shape);
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(e);
    WaitFlag<HardEvent::V_MTE3>(e);
    DataCopy(yg, yl, n);
}

// Elementwise activations: 0 Gelu, 1 FasterGelu, 2 Gelu with highPrecision, 3 GeGLU (x1 the gate)
template <typename T, int kind>
__aicore__ inline void ActRun(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    const uint32_t n = t.rowsPerBlock * t.cols;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q0, q1;
    TQue<TPosition::VECOUT, 1> qo;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(q0, 1, n * sizeof(T));
    pipe.InitBuffer(q1, 1, n * sizeof(T));
    pipe.InitBuffer(qo, 1, n * sizeof(T));
    pipe.InitBuffer(tmp, t.tmpBytes);
    GlobalTensor<T> xg, x1g, yg;
    xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * n, n);
    x1g.SetGlobalBuffer((__gm__ T*)x1 + GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ T*)y + GetBlockIdx() * n, n);
    LocalTensor<T> a = q0.AllocTensor<T>(), b = q1.AllocTensor<T>();
    DataCopy(a, xg, n);
    q0.EnQue(a);
    if constexpr (kind == 3) DataCopy(b, x1g, n);
    q1.EnQue(b);
    a = q0.DeQue<T>();
    b = q1.DeQue<T>();
    LocalTensor<T> z = qo.AllocTensor<T>();
    LocalTensor<uint8_t> work = tmp.Get<uint8_t>();
    if constexpr (kind == 0) Gelu<T>(z, a, work, n);
    if constexpr (kind == 1) FasterGelu<T>(z, a, work, n);
    if constexpr (kind == 2) Gelu<T, true>(z, a, work, n);
    if constexpr (kind == 3) GeGLU<T>(z, a, b, work, n);
    qo.EnQue(z);
    q0.FreeTensor(a);
    q1.FreeTensor(b);
    z = qo.DeQue<T>();
    DataCopy(yg, z, n);
    qo.FreeTensor(z);
}
extern "C" __global__ __aicore__ void gelu_float(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<float, 0>(x, x1, y, tiling);
}
extern "C" __global__ __aicore__ void gelu_half(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<half, 0>(x, x1, y, tiling);
}
extern "C" __global__ __aicore__ void gelu_half_precise(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<half, 2>(x, x1, y, tiling);
}
extern "C" __global__ __aicore__ void faster_gelu_float(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<float, 1>(x, x1, y, tiling);
}
extern "C" __global__ __aicore__ void geglu_float(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<float, 3>(x, x1, y, tiling);
}
extern "C" __global__ __aicore__ void geglu_half(GM_ADDR x, GM_ADDR x1, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    ActRun<half, 3>(x, x1, y, tiling);
}

// Sum of the first cols - 5 elements of each row (SumParams.n < inner), and CumSum along either
// axis with the last row out: 0 Sum, 1 CumSum last axis, 2 CumSum first axis, 3 Mean in float
template <typename T, int kind>
__aicore__ inline void ReduceRun(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTiling, t, tiling);
    HlKernel<T> k(t);
    const uint32_t rowsOut = (t.rowsPerBlock * sizeof(T) + 31) / 32 * 32 / sizeof(T);
    GlobalTensor<T> xg, yg, lg;
    k.InitIn(xg, x, k.n_);
    k.InitIn(yg, y, kind == 0 || kind == 3 ? rowsOut : k.n_);
    k.InitIn(lg, last, t.cols);
    k.Init();
    LocalTensor<T> xl = k.In(xg);
    LocalTensor<T> yl = k.outQ_.template AllocTensor<T>();
    LocalTensor<T> lastRow = k.rowQ_.template AllocTensor<T>();
    LocalTensor<uint8_t> work = k.tmp_.template Get<uint8_t>();
    if constexpr (kind == 0) {
        Sum<T>(yl, xl, work, SumParams{t.rowsPerBlock, t.cols, t.cols - 5});
    } else if constexpr (kind == 3) {
        Mean<T, float>(yl, xl, work, MeanParams{t.rowsPerBlock, t.cols, t.cols - 5});
    } else {
        static constexpr CumSumConfig cfg = {kind == 1, false, true};
        CumSum<T, cfg>(yl, lastRow, xl, work, CumSumInfo{t.rowsPerBlock, t.cols});
        k.Store(lg, lastRow, t.cols);
    }
    k.rowQ_.FreeTensor(lastRow);
    k.outQ_.EnQue(yl);
    k.inQ_.FreeTensor(xl);
    LocalTensor<T> z = k.outQ_.template DeQue<T>();
    DataCopy(yg, z, kind == 0 || kind == 3 ? rowsOut : k.n_);
    k.outQ_.FreeTensor(z);
}
extern "C" __global__ __aicore__ void sum_float(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR workspace, GM_ADDR tiling) {
    ReduceRun<float, 0>(x, y, last, tiling);
}
extern "C" __global__ __aicore__ void sum_half(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR workspace, GM_ADDR tiling) {
    ReduceRun<half, 0>(x, y, last, tiling);
}
extern "C" __global__ __aicore__ void mean_half(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR workspace, GM_ADDR tiling) {
    ReduceRun<half, 3>(x, y, last, tiling);
}
extern "C" __global__ __aicore__ void cumsum_last_half(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
    ReduceRun<half, 1>(x, y, last, tiling);
}
extern "C" __global__ __aicore__ void cumsum_first_float(GM_ADDR x, GM_ADDR y, GM_ADDR last, GM_ADDR workspace,
                                                         GM_ADDR tiling) {
    ReduceRun<float, 2>(x, y, last, tiling);
}

// TopK (normal mode) of each row: the k largest (or smallest) values and their indices, k = 5
template <typename T, bool largest>
__aicore__ inline void TopKRunKernel(GM_ADDR x, GM_ADDR values, GM_ADDR indices, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(optiling::HlTopKTiling, t, tiling);
    const uint32_t n = t.rowsPerBlock * t.cols, kAlign = sizeof(T) == 4 ? t.topk.kAlignFourBytes : t.topk.kAlignTwoBytes;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> valQ, idxQ;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(inQ, 1, n * sizeof(T));
    pipe.InitBuffer(valQ, 1, t.rowsPerBlock * kAlign * sizeof(T));
    pipe.InitBuffer(idxQ, 1, t.rowsPerBlock * t.topk.kAlignFourBytes * sizeof(int32_t));
    pipe.InitBuffer(tmp, t.tmpBytes);
    GlobalTensor<T> xg, vg;
    GlobalTensor<int32_t> ig;
    xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * n, n);
    vg.SetGlobalBuffer((__gm__ T*)values + GetBlockIdx() * t.rowsPerBlock * kAlign, t.rowsPerBlock * kAlign);
    ig.SetGlobalBuffer((__gm__ int32_t*)indices + GetBlockIdx() * t.rowsPerBlock * t.topk.kAlignFourBytes,
                       t.rowsPerBlock * t.topk.kAlignFourBytes);
    LocalTensor<T> xl = inQ.AllocTensor<T>();
    DataCopy(xl, xg, n);
    inQ.EnQue(xl);
    xl = inQ.DeQue<T>();
    LocalTensor<T> vl = valQ.AllocTensor<T>();
    LocalTensor<int32_t> il = idxQ.AllocTensor<int32_t>();
    TopKInfo info = {static_cast<int32_t>(t.rowsPerBlock), static_cast<int32_t>(t.cols), static_cast<int32_t>(t.cols)};
    TopK<T>(vl, il, xl, LocalTensor<int32_t>(), LocalTensor<bool>(), tmp.Get<uint8_t>(), t.k, t.topk, info, largest);
    valQ.EnQue(vl);
    idxQ.EnQue(il);
    inQ.FreeTensor(xl);
    vl = valQ.DeQue<T>();
    il = idxQ.DeQue<int32_t>();
    DataCopy(vg, vl, t.rowsPerBlock * kAlign);
    DataCopy(ig, il, t.rowsPerBlock * t.topk.kAlignFourBytes);
    valQ.FreeTensor(vl);
    idxQ.FreeTensor(il);
}
extern "C" __global__ __aicore__ void topk_float(GM_ADDR x, GM_ADDR values, GM_ADDR indices, GM_ADDR workspace,
                                                 GM_ADDR tiling) {
    TopKRunKernel<float, true>(x, values, indices, tiling);
}
extern "C" __global__ __aicore__ void bottomk_half(GM_ADDR x, GM_ADDR values, GM_ADDR indices, GM_ADDR workspace,
                                                   GM_ADDR tiling) {
    TopKRunKernel<half, false>(x, values, indices, tiling);
}
