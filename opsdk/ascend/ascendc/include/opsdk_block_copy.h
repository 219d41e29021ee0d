// GM <-> Unified Buffer copies in whole 32-byte blocks, for AI Core kernels that also build for
// __CCE_AICORE__ 200 (Ascend310P), whose Ascend C has no DataCopyPad (basic_api/impl/dav_m200/
// kernel_operator_data_copy_impl.h). Part of opsdk; real Ascend C (not the CPU model): a kernel
// in an operator's op_kernel/ includes it after kernel_operator.h and opsdk puts its text in
// place of the #include, so that the kernel stays one self-contained source (for the model, the
// CANN project and the toolkit's builds). OPSDK_BLOCK_COPY_ONLY says whether to use it.
//
// Load: the whole blocks by DataCopy, the last part block by the scalar unit. Writer::Store: the
// whole blocks by DataCopy, then the block ending at the tile's end, gathered by the scalar unit
// (GM addresses need no alignment; UB ones do); or, staged, element by element for rows shorter
// than one block (Writer::Put: one statistic a row), out in whole blocks. Rows: each core's
// rows, at least minRows of them, so that a staged run holds one block.
#ifndef OPSDK_BLOCK_COPY_H
#define OPSDK_BLOCK_COPY_H

#if __CCE_AICORE__ == 200
#define OPSDK_BLOCK_COPY_ONLY 1
#else
#define OPSDK_BLOCK_COPY_ONLY 0
#endif

#if OPSDK_BLOCK_COPY_ONLY
namespace block_copy {
using namespace AscendC;

template <HardEvent E> __aicore__ inline void Sync()
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(E));
    SetFlag<E>(e);
    WaitFlag<E>(e);
}

// n elements of src into the queue buffer in: the whole blocks by DataCopy, the rest by the
// scalar unit (ordered after the vector's last reads of the buffer, before its next ones).
template <typename T> __aicore__ inline void Load(const LocalTensor<T>& in, const GlobalTensor<T>& src, uint32_t n)
{
    constexpr uint32_t BLOCK = 32 / sizeof(T);
    const uint32_t whole = n / BLOCK * BLOCK;
    if (whole > 0) {
        DataCopy(in, src, whole);
    }
    if (whole < n) {
        Sync<HardEvent::V_S>();
        for (uint32_t i = whole; i < n; ++i) {
            in.SetValue(i, src.GetValue(i));
        }
        Sync<HardEvent::S_V>();
    }
}

// Writes one core's run of GM elements in order, element by element through the scalar unit and
// out in whole blocks; the last block ends at the run's end. The run holds at least one block,
// or is the whole tensor (then the scalar unit writes it and cleans its data cache).
template <typename T> class Writer {
public:
    static constexpr uint32_t BLOCK = 32 / sizeof(T);
    static constexpr uint32_t STAGE = 8 * BLOCK;
    static constexpr uint32_t BYTES = (STAGE + BLOCK) * sizeof(T);  // of the buffer Init takes

    __aicore__ inline void Init(const GlobalTensor<T>& gm, const LocalTensor<T>& buffer)
    {
        gm_ = gm;
        stage_ = buffer;
        block_ = buffer[STAGE];
    }

    __aicore__ inline void Put(T v)
    {
        stage_.SetValue(pos_ % STAGE, v);
        if (++pos_ % STAGE == 0) {
            Sync<HardEvent::S_MTE3>();
            DataCopy(gm_[pos_ - STAGE], stage_, STAGE);
            Sync<HardEvent::MTE3_S>();
        }
    }

    // n elements of the queue buffer out (written by the vector) to dst: staged, element by
    // element; else (n >= one block) the whole blocks by DataCopy, then the block ending at n,
    // gathered by the scalar unit (the same values again where the two overlap).
    __aicore__ inline void Store(const GlobalTensor<T>& dst, const LocalTensor<T>& out, uint32_t n, bool staged)
    {
        const uint32_t whole = n / BLOCK * BLOCK;
        if (!staged) {
            DataCopy(dst, out, whole);
        }
        if (staged || whole < n) {
            Sync<HardEvent::V_S>();
        }
        if (staged) {
            for (uint32_t i = 0; i < n; ++i) {
                Put(out.GetValue(i));
            }
        } else if (whole < n) {
            for (uint32_t i = 0; i < BLOCK; ++i) {
                block_.SetValue(i, out.GetValue(n - BLOCK + i));
            }
            Sync<HardEvent::S_MTE3>();
            DataCopy(dst[n - BLOCK], block_, BLOCK);
            Sync<HardEvent::MTE3_S>();
        }
    }

    __aicore__ inline void Finish()
    {
        const uint32_t rest = static_cast<uint32_t>(pos_ % STAGE);
        if (pos_ < BLOCK) {
            for (uint32_t i = 0; i < rest; ++i) {
                gm_.SetValue(i, stage_.GetValue(i));
            }
            DataCacheCleanAndInvalid<T, CacheLine::SINGLE_CACHE_LINE>(gm_);
            return;
        }
        const uint32_t whole = rest / BLOCK * BLOCK;
        if (whole > 0) {
            Sync<HardEvent::S_MTE3>();
            DataCopy(gm_[pos_ - rest], stage_, whole);
        }
        if (whole < rest) {
            for (uint32_t i = 0; i < BLOCK; ++i) {
                block_.SetValue(i, stage_.GetValue(static_cast<uint32_t>((pos_ - BLOCK + i) % STAGE)));
            }
            Sync<HardEvent::S_MTE3>();
            DataCopy(gm_[pos_ - BLOCK], block_, BLOCK);
        }
    }

private:
    GlobalTensor<T> gm_;
    LocalTensor<T> stage_, block_;
    uint64_t pos_ = 0;
};

// This core's rows [first, first + count) when each core needs at least minRows: the tiling's
// runs, lengthened to minRows, and a last run below it given to the core before.
__aicore__ inline void Rows(uint64_t blockRows, uint64_t lastBlockRows, uint64_t minRows, uint64_t& first, uint64_t& count)
{
    const uint64_t rows = static_cast<uint64_t>(GetBlockNum() - 1) * blockRows + lastBlockRows;
    const uint64_t per = blockRows > minRows ? blockRows : minRows;
    uint64_t cores = (rows + per - 1) / per;
    if (cores > 1 && rows - (cores - 1) * per < minRows) {
        --cores;
    }
    const uint64_t idx = static_cast<uint64_t>(GetBlockIdx());
    first = idx * per;
    count = idx >= cores ? 0 : idx + 1 == cores ? rows - first : per;
}
}  // namespace block_copy
#endif

#endif  // OPSDK_BLOCK_COPY_H
