// opsdk's model of CANN's ge::Shape (graph/tensor.h), as far as the host tiling functions of the
// high-level library read it: the dimensions, their count and product. Part of opsdk (not CANN).
#ifndef OPSDK_GRAPH_TENSOR_H
#define OPSDK_GRAPH_TENSOR_H

#include <cstdint>
#include <vector>

namespace ge {
class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
    std::vector<int64_t> GetDims() const { return dims_; }
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    int64_t GetShapeSize() const {
        if (dims_.empty()) return 0;
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return n;
    }

private:
    std::vector<int64_t> dims_;
};
}  // namespace ge

#endif  // OPSDK_GRAPH_TENSOR_H
