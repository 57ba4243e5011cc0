// CudaGraph (graph.h): stream capture, instantiation and replay through the CUDA runtime's graph API.
#include "kernels/cuda/graph.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"

namespace taco::cuda {

Result<std::unique_ptr<CudaGraph>> CudaGraph::capture(void* stream, const std::function<void()>& body) {
    auto s = static_cast<cudaStream_t>(stream);
    cudaError_t begun = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (begun != cudaSuccess) {
        cudaGetLastError();
        return error("cannot start a CUDA graph capture: {}", cudaGetErrorString(begun));
    }
    body();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    if (ended != cudaSuccess || graph == nullptr) {
        cudaGetLastError();
        if (graph != nullptr) cudaGraphDestroy(graph);
        return error("CUDA graph capture failed: {} (a call in the captured step synchronises or is not capturable)",
                     cudaGetErrorString(ended));
    }
    std::unique_ptr<CudaGraph> g(new CudaGraph());
    g->graph_ = graph;
    size_t nodes = 0;
    TACO_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    g->num_nodes_ = nodes;
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess) {
        cudaGetLastError();
        return error("cannot instantiate a CUDA graph of {} nodes: {}", nodes, cudaGetErrorString(made));
    }
    g->exec_ = exec;
    return g;
}

CudaGraph::~CudaGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
    if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void CudaGraph::replay(void* stream) const {
    TACO_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream)));
}

}  // namespace taco::cuda
