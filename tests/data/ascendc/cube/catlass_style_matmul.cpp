// A template-library kernel in the style of Huawei's catlass, written for these tests: a kernel
// class whose Cube and vector parts are explicit specialisations of one member template,
// operator()<AscendC::AIC> and operator()<AscendC::AIV>, written inside the class. Huawei's
// compiler is clang-based and takes them; GCC rejects explicit specialisations in class scope
// (GCC bug 85282). The Cube part computes W = A * B (half -> float) into a GM workspace; the
// vector part reads W back and writes C = ReLU(W). Each core type's build runs its own part: on
// the model the Cube build and the vector build run one after the other, in stream order.
#include "kernel_operator.h"

namespace tmpl {

struct Shape {
    uint32_t m;
    uint32_t n;
    uint32_t k;
};

// The Cube's tile: GM -> A1/B1 (Nd2Nz) -> A2/B2 (LoadData) -> Mmad -> Fixpipe to GM.
template <uint32_t M, uint32_t N, uint32_t K>
struct BlockMmad {
    AscendC::TPipe* pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1Buf;
    AscendC::TBuf<AscendC::TPosition::B1> b1Buf;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> c1Buf;

    __aicore__ inline explicit BlockMmad(AscendC::TPipe* p) : pipe(p)
    {
        pipe->InitBuffer(a1Buf, M * K * sizeof(half));
        pipe->InitBuffer(b1Buf, K * N * sizeof(half));
        pipe->InitBuffer(a2Buf, M * K * sizeof(half));
        pipe->InitBuffer(b2Buf, K * N * sizeof(half));
        pipe->InitBuffer(c1Buf, M * N * sizeof(float));
    }

    __aicore__ inline void operator()(AscendC::GlobalTensor<half> const& a, AscendC::GlobalTensor<half> const& b,
                                      AscendC::GlobalTensor<float> const& w)
    {
        using namespace AscendC;
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b2 = b2Buf.Get<half>();
        LocalTensor<float> c1 = c1Buf.Get<float>();
        DataCopy(a1, a, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
        DataCopy(b1, b, Nd2NzParams(1, K, N, 0, N, K, 1, 0));
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        for (uint32_t i = 0; i < M / 16; ++i) {
            LoadData(a2[i * 16 * K], a1, LoadData2DParams(i, K / 16, M / 16, 0, 0, false, 0));
        }
        for (uint32_t i = 0; i < K / 16; ++i) {
            LoadData(b2[i * 16 * N], b1, LoadData2DParams(i, N / 16, K / 16, 0, 0, true, 0));
        }
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        MmadParams mmad;
        mmad.m = M;
        mmad.n = N;
        mmad.k = K;
        mmad.cmatrixInitVal = true;
        Mmad(c1, a2, b2, mmad);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        FixpipeParamsV220 fix(N, M, M, N, false);
        Fixpipe(w, c1, fix);
    }
};

// The vector epilogue: GM workspace -> UB, ReLU, UB -> GM.
template <uint32_t COUNT>
struct BlockEpilogueRelu {
    AscendC::TPipe* pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueue;

    __aicore__ inline explicit BlockEpilogueRelu(AscendC::TPipe* p) : pipe(p)
    {
        pipe->InitBuffer(inQueue, 1, COUNT * sizeof(float));
        pipe->InitBuffer(outQueue, 1, COUNT * sizeof(float));
    }

    __aicore__ inline void operator()(AscendC::GlobalTensor<float> const& w, AscendC::GlobalTensor<float> const& c)
    {
        using namespace AscendC;
        LocalTensor<float> x = inQueue.AllocTensor<float>();
        DataCopy(x, w, COUNT);
        inQueue.EnQue(x);
        x = inQueue.DeQue<float>();
        LocalTensor<float> y = outQueue.AllocTensor<float>();
        Relu(y, x, COUNT);
        outQueue.EnQue(y);
        inQueue.FreeTensor(x);
        y = outQueue.DeQue<float>();
        DataCopy(c, y, COUNT);
        outQueue.FreeTensor(y);
    }
};

template <class BlockMmad_, class BlockEpilogue_, uint32_t M, uint32_t N, uint32_t K>
class MatmulReluKernel {
public:
    struct Params {
        GM_ADDR a;
        GM_ADDR b;
        GM_ADDR c;
        GM_ADDR workspace;
    };

    template <int32_t CORE_TYPE = g_coreType>
    __aicore__ inline void operator()(Params const& params);

    template <>
    __aicore__ inline void operator()<AscendC::AIC>(Params const& params)
    {
        AscendC::TPipe pipe;
        AscendC::GlobalTensor<half> a;
        AscendC::GlobalTensor<half> b;
        AscendC::GlobalTensor<float> w;
        a.SetGlobalBuffer((__gm__ half*)params.a + AscendC::GetBlockIdx() * M * K, M * K);
        b.SetGlobalBuffer((__gm__ half*)params.b, K * N);
        w.SetGlobalBuffer((__gm__ float*)params.workspace + AscendC::GetBlockIdx() * M * N, M * N);
        BlockMmad_ blockMmad(&pipe);
        blockMmad(a, b, w);
    }

    template <>
    __aicore__ inline void operator()<AscendC::AIV>(Params const& params)
    {
        AscendC::TPipe pipe;
        AscendC::GlobalTensor<float> w;
        AscendC::GlobalTensor<float> c;
        w.SetGlobalBuffer((__gm__ float*)params.workspace + AscendC::GetBlockIdx() * M * N, M * N);
        c.SetGlobalBuffer((__gm__ float*)params.c + AscendC::GetBlockIdx() * M * N, M * N);
        BlockEpilogue_ epilogue(&pipe);
        epilogue(w, c);
    }
};

}  // namespace tmpl

constexpr uint32_t TILE_M = 32;
constexpr uint32_t TILE_N = 32;
constexpr uint32_t TILE_K = 64;
using Kernel = tmpl::MatmulReluKernel<tmpl::BlockMmad<TILE_M, TILE_N, TILE_K>,
                                      tmpl::BlockEpilogueRelu<TILE_M * TILE_N>, TILE_M, TILE_N, TILE_K>;

extern "C" __global__ __aicore__ void catlass_style_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace,
                                                           GM_ADDR tiling)
{
    Kernel op;
    op({a, b, c, workspace});
}
