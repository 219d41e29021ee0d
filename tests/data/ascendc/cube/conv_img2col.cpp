// A 3x3 convolution on the Cube as img2col + Mmad, basic-API style with hand-written flags: each
// block convolves one image X[H][W][C] (NHWC with C = 16: one C1 of NC1HWC0) with the weights
// Wt[KH * KW * C][CO] ((kh, kw, c) rows) into Y[HO * WO][CO] (float), padding 1, stride 1.
// The feature map goes to A1 as it is, LoadData 3Dv2 unfolds it into A2 (img2col), the weights
// go through B1 to B2 (Nd2Nz, transposed fractals), Mmad, Fixpipe to GM.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t H = 8;
constexpr uint32_t W = 8;
constexpr uint32_t C = 16;
constexpr uint32_t KH = 3;
constexpr uint32_t KW = 3;
constexpr uint32_t CO = 32;
constexpr uint32_t HO = H;
constexpr uint32_t WO = W;
constexpr uint32_t KK = KH * KW * C;
constexpr uint32_t MM = HO * WO;
// the feature map and padding value come from SetFmatrix and SetLoadDataPaddingValue
constexpr IsResetLoad3dConfig LOAD3D_CONFIG = {false, false};

class ConvImg2col {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR y)
    {
        xGm.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * H * W * C, H * W * C);
        wGm.SetGlobalBuffer((__gm__ half*)w, KK * CO);
        yGm.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * MM * CO, MM * CO);
        pipe.InitBuffer(a1Buf, H * W * C * sizeof(half));
        pipe.InitBuffer(b1Buf, KK * CO * sizeof(half));
        pipe.InitBuffer(a2Buf, MM * KK * sizeof(half));
        pipe.InitBuffer(b2Buf, KK * CO * sizeof(half));
        pipe.InitBuffer(c1Buf, MM * CO * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b2 = b2Buf.Get<half>();
        LocalTensor<float> c1 = c1Buf.Get<float>();
        DataCopy(a1, xGm, H * W * C);
        Nd2NzParams nd2nz;
        nd2nz.ndNum = 1;
        nd2nz.nValue = KK;
        nd2nz.dValue = CO;
        nd2nz.srcDValue = CO;
        nd2nz.dstNzC0Stride = KK;
        nd2nz.dstNzNStride = 1;
        DataCopy(b1, wGm, nd2nz);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        uint8_t padList[PAD_SIZE] = {1, 1, 1, 1};
        SetFmatrix(H, W, padList, FmatrixMode::FMATRIX_LEFT);
        SetLoadDataPaddingValue<half>(half(0));
        LoadData3DParamsV2<half> img2col;
        img2col.channelSize = C;
        img2col.kExtension = KK;
        img2col.mExtension = MM;
        img2col.filterW = KW;
        img2col.filterH = KH;
        LoadData<half, LOAD3D_CONFIG>(a2, a1, img2col);
        LoadData2DParams load;
        for (uint32_t i = 0; i < KK / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = CO / 16;
            load.srcStride = KK / 16;
            load.ifTranspose = true;
            LoadData(b2[i * 16 * CO], b1, load);
        }
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        MmadParams mmad;
        mmad.m = MM;
        mmad.n = CO;
        mmad.k = KK;
        Mmad(c1, a2, b2, mmad);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        FixpipeParamsV220 fix;
        fix.nSize = CO;
        fix.mSize = MM;
        fix.srcStride = MM;
        fix.dstStride = CO;
        Fixpipe(yGm, c1, fix);
    }

private:
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    GlobalTensor<half> xGm;
    GlobalTensor<half> wGm;
    GlobalTensor<float> yGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR x, GM_ADDR w, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    ConvImg2col op;
    op.Init(x, w, y);
    op.Process();
}
