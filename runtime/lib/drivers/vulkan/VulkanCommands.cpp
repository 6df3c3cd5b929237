//===- VulkanCommands.cpp - Command lists of the Vulkan driver ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// VulkanCommandList: dispatches recorded once into a primary command buffer
// (descriptor sets, push constants, barriers and timestamp queries) and
// replayed on every submission.
//
//===----------------------------------------------------------------------===//

#ifdef HESPER_HAVE_VULKAN_HEADERS

#include "VulkanInternal.h"

namespace hesper::rt::detail::vk {

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

VulkanCommandList::~VulkanCommandList() {
  const DeviceFunctions &fn = ctx->fn;
  releaseRecording();
  if (fence != VK_NULL_HANDLE)
    fn.vkDestroyFence(ctx->device, fence, nullptr);
  if (pool != VK_NULL_HANDLE)
    fn.vkDestroyCommandPool(ctx->device, pool, nullptr);
}

void VulkanCommandList::releaseRecording() {
  const DeviceFunctions &fn = ctx->fn;
  if (descriptorPool != VK_NULL_HANDLE)
    fn.vkDestroyDescriptorPool(ctx->device, descriptorPool, nullptr);
  if (queryPool != VK_NULL_HANDLE)
    fn.vkDestroyQueryPool(ctx->device, queryPool, nullptr);
  descriptorPool = VK_NULL_HANDLE;
  queryPool = VK_NULL_HANDLE;
  launches.clear();
  recorded = false;
  times.clear();
}

Status VulkanCommandList::init() {
  const DeviceFunctions &fn = ctx->fn;
  VkCommandPoolCreateInfo poolInfo{};
  poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = ctx->physical.queueFamily;
  HESPER_VK_TRY(fn, vkCreateCommandPool, ctx->device, &poolInfo, nullptr,
                &pool);
  VkCommandBufferAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocInfo.commandPool = pool;
  allocInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocInfo.commandBufferCount = 1;
  HESPER_VK_TRY(fn, vkAllocateCommandBuffers, ctx->device, &allocInfo,
                &commands);
  VkFenceCreateInfo fenceInfo{};
  fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  HESPER_VK_TRY(fn, vkCreateFence, ctx->device, &fenceInfo, nullptr, &fence);
  return Status();
}

Status VulkanCommandList::resolve(size_t index, const Dispatch &d,
                                  Launch &launch) const {
  // The ABI and the grid were checked by ReplayState::validate; what is left
  // is whether the objects belong to this device.
  std::string where = "dispatch " + std::to_string(index) + ": ";
  if (!ctx->isLive(static_cast<const Kernel *>(d.kernel), 0))
    return Status::error(where + "the kernel belongs to another device");
  launch.kernel = static_cast<VulkanKernel *>(d.kernel);
  launch.kernelSerial = launch.kernel->serial;
  for (size_t b = 0; b < d.bindings.size(); ++b) {
    Buffer *buffer = d.bindings[b];
    if (!ctx->isLive(static_cast<const Buffer *>(buffer), 0))
      return Status::error(where + "the buffer of binding " +
                           std::to_string(b) + " belongs to another device");
    auto *vkBuffer = static_cast<VulkanBuffer *>(buffer);
    launch.buffers.emplace_back(vkBuffer, vkBuffer->serial);
  }
  launch.pushConstants = d.pushConstants;
  for (int dim = 0; dim < 3; ++dim)
    launch.grid[dim] = d.grid[dim];
  return Status();
}

Status VulkanCommandList::record(const std::vector<Dispatch> &dispatches) {
  // Check everything before touching the previous recording: the kernels'
  // ABI and the grid limits (shared with the other drivers), then ownership.
  Status valid = detail::ReplayState(ctx->physical.info.maxWorkgroupCount)
                     .validate(dispatches);
  if (!valid)
    return valid;
  std::vector<Launch> resolved(dispatches.size());
  for (size_t i = 0; i < dispatches.size(); ++i) {
    Status s = resolve(i, dispatches[i], resolved[i]);
    if (!s)
      return s;
  }

  releaseRecording();
  launches = std::move(resolved);
  const DeviceFunctions &fn = ctx->fn;

  // One descriptor set per dispatch that has bindings.
  uint32_t sets = 0, descriptors = 0;
  for (const Launch &l : launches) {
    if (!l.buffers.empty()) {
      ++sets;
      descriptors += static_cast<uint32_t>(l.buffers.size());
    }
  }
  if (sets > 0) {
    VkDescriptorPoolSize poolSize{};
    poolSize.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    poolSize.descriptorCount = descriptors;
    VkDescriptorPoolCreateInfo poolInfo{};
    poolInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    poolInfo.maxSets = sets;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &poolSize;
    HESPER_VK_TRY(fn, vkCreateDescriptorPool, ctx->device, &poolInfo, nullptr,
                  &descriptorPool);

    std::vector<VkDescriptorSetLayout> layouts;
    for (const Launch &l : launches)
      if (!l.buffers.empty())
        layouts.push_back(l.kernel->setLayout);
    std::vector<VkDescriptorSet> allocated(layouts.size());
    VkDescriptorSetAllocateInfo allocInfo{};
    allocInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    allocInfo.descriptorPool = descriptorPool;
    allocInfo.descriptorSetCount = sets;
    allocInfo.pSetLayouts = layouts.data();
    HESPER_VK_TRY(fn, vkAllocateDescriptorSets, ctx->device, &allocInfo,
                  allocated.data());

    std::vector<VkDescriptorBufferInfo> bufferInfos;
    bufferInfos.reserve(descriptors);
    std::vector<VkWriteDescriptorSet> writes;
    writes.reserve(descriptors);
    size_t next = 0;
    for (Launch &l : launches) {
      if (l.buffers.empty())
        continue;
      l.set = allocated[next++];
      for (size_t b = 0; b < l.buffers.size(); ++b) {
        VkDescriptorBufferInfo bufferInfo{};
        bufferInfo.buffer = l.buffers[b].first->memory.buffer;
        bufferInfo.offset = 0;
        bufferInfo.range = VK_WHOLE_SIZE;
        bufferInfos.push_back(bufferInfo);
        VkWriteDescriptorSet write{};
        write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        write.dstSet = l.set;
        write.dstBinding = static_cast<uint32_t>(b);
        write.descriptorCount = 1;
        write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        write.pBufferInfo = &bufferInfos.back();
        writes.push_back(write);
      }
    }
    fn.vkUpdateDescriptorSets(ctx->device, static_cast<uint32_t>(writes.size()),
                              writes.data(), 0, nullptr);
  }

  // Two timestamps per dispatch.
  if (timing && ctx->physical.info.timestampPeriodNs > 0 && !launches.empty()) {
    VkQueryPoolCreateInfo queryInfo{};
    queryInfo.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queryInfo.queryCount = static_cast<uint32_t>(2 * launches.size());
    HESPER_VK_TRY(fn, vkCreateQueryPool, ctx->device, &queryInfo, nullptr,
                  &queryPool);
  }

  Status s = recordCommands();
  if (!s) {
    releaseRecording();
    return s;
  }
  recorded = true;
  return Status();
}

Status VulkanCommandList::recordCommands() {
  const DeviceFunctions &fn = ctx->fn;
  uint64_t messages = validationMessages.load(std::memory_order_relaxed);
  HESPER_VK_TRY(fn, vkResetCommandBuffer, commands, 0);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  // Neither one-time nor simultaneous: the buffer is submitted again after
  // each submission has finished.
  HESPER_VK_TRY(fn, vkBeginCommandBuffer, commands, &begin);
  uint32_t queries = static_cast<uint32_t>(2 * launches.size());
  if (queryPool != VK_NULL_HANDLE)
    fn.vkCmdResetQueryPool(commands, queryPool, 0, queries);
  // Earlier transfers and submissions (of this list too) come first.
  ctx->barrier(commands, kDeviceStages, kDeviceWrites,
               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
               VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch &l = launches[i];
    const VulkanKernel &k = *l.kernel;
    if (i > 0)
      ctx->barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    fn.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    if (l.set != VK_NULL_HANDLE)
      fn.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                 k.pipelineLayout, 0, 1, &l.set, 0, nullptr);
    if (!l.pushConstants.empty())
      fn.vkCmdPushConstants(commands, k.pipelineLayout,
                            VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            static_cast<uint32_t>(l.pushConstants.size()),
                            l.pushConstants.data());
    if (queryPool != VK_NULL_HANDLE)
      fn.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             queryPool, static_cast<uint32_t>(2 * i));
    fn.vkCmdDispatch(commands, l.grid[0], l.grid[1], l.grid[2]);
    if (queryPool != VK_NULL_HANDLE)
      fn.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             queryPool, static_cast<uint32_t>(2 * i + 1));
  }
  // Results are read by later transfers, dispatches or the host.
  ctx->barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
               VK_ACCESS_SHADER_WRITE_BIT,
               kDeviceStages | VK_PIPELINE_STAGE_HOST_BIT,
               kDeviceAccesses | VK_ACCESS_HOST_READ_BIT);
  HESPER_VK_TRY(fn, vkEndCommandBuffer, commands);
  return validationStatus(messages, "recording the command list");
}

Status VulkanCommandList::setPushConstants(size_t dispatchIndex,
                                           const std::vector<uint8_t> &bytes) {
  if (!recorded)
    return Status::error("setPushConstants: the command list is not recorded");
  if (dispatchIndex >= launches.size())
    return Status::error("setPushConstants: dispatch " +
                         std::to_string(dispatchIndex) + " out of range (" +
                         std::to_string(launches.size()) + " recorded)");
  Launch &l = launches[dispatchIndex];
  if (!ctx->isLive(static_cast<const Kernel *>(l.kernel), l.kernelSerial))
    return Status::error("setPushConstants: the kernel of dispatch " +
                         std::to_string(dispatchIndex) + " has been destroyed");
  const KernelDesc &desc = l.kernel->kernelDesc;
  if (bytes.size() != desc.pushConstantBytes)
    return Status::error(
        "setPushConstants: dispatch " + std::to_string(dispatchIndex) +
        ": kernel '" + desc.name + "' takes " +
        std::to_string(desc.pushConstantBytes) + " push-constant bytes, got " +
        std::to_string(bytes.size()));
  l.pushConstants = bytes;
  Status s = recordCommands();
  if (!s)
    recorded = false;
  return s;
}

Status VulkanCommandList::submit() {
  if (!recorded)
    return Status::error("submit: the command list is not recorded");
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch &l = launches[i];
    bool live =
        ctx->isLive(static_cast<const Kernel *>(l.kernel), l.kernelSerial);
    for (const auto &[buffer, serial] : l.buffers)
      live = live && ctx->isLive(static_cast<const Buffer *>(buffer), serial);
    if (!live)
      return Status::error("submit: a kernel or buffer of dispatch " +
                           std::to_string(i) + " has been destroyed");
  }

  {
    std::lock_guard<std::mutex> lock(ctx->queueMutex);
    Status s = ctx->submitAndWait(commands, fence);
    if (!s)
      return s;
  }
  ++submitted;

  times.clear();
  if (queryPool == VK_NULL_HANDLE)
    return Status();
  std::vector<uint64_t> stamps(2 * launches.size());
  HESPER_VK_TRY(ctx->fn, vkGetQueryPoolResults, ctx->device, queryPool, 0,
                static_cast<uint32_t>(stamps.size()),
                stamps.size() * sizeof(uint64_t), stamps.data(),
                sizeof(uint64_t),
                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  uint32_t bits = ctx->physical.timestampValidBits;
  uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  double period = ctx->physical.info.timestampPeriodNs;
  for (size_t i = 0; i < launches.size(); ++i) {
    uint64_t ticks = (stamps[2 * i + 1] - stamps[2 * i]) & mask;
    times.push_back(static_cast<double>(ticks) * period);
  }
  return Status();
}

} // namespace hesper::rt::detail::vk

#endif // HESPER_HAVE_VULKAN_HEADERS
