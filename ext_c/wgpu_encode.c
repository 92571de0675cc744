/* The Wgpu backend's compute-pass commands, made from C (accel/wgpu/runtime.py, accel/capture).

   Each wgpu-native call from Python goes through libffi (wgpu-py loads the library in cffi's ABI
   mode): about 0.4 us a call on a 2020s x86 core, while wgpu-native's own work is a fraction of
   that. Recording a dispatch takes two or three such calls (pipeline, bind group, dispatch), and a
   replayed step one set per kernel. Here they are one compiled call per dispatch, or one per
   recorded step. wgpu-native's entry points arrive as addresses (emb_wgpu_use), so this file needs
   no wgpu header and no link to the library. A dispatch's handles arrive as wgpu-py's own pointers
   (cffi passes any pointer for a void *); a recorded step's as addresses in a uint64 array. */
#include <stddef.h>
#include <stdint.h>

#include "api.h"

typedef void (*set_pipeline_fn)(void *pass, void *pipeline);
typedef void (*set_bind_group_fn)(void *pass, uint32_t index, void *group, size_t count,
                                  const uint32_t *offsets);
typedef void (*dispatch_fn)(void *pass, uint32_t x, uint32_t y, uint32_t z);

static set_pipeline_fn set_pipeline;
static set_bind_group_fn set_bind_group;
static dispatch_fn dispatch_workgroups;

void emb_wgpu_use(uintptr_t set_pipeline_addr, uintptr_t set_bind_group_addr, uintptr_t dispatch_addr) {
    set_pipeline = (set_pipeline_fn)set_pipeline_addr;
    set_bind_group = (set_bind_group_fn)set_bind_group_addr;
    dispatch_workgroups = (dispatch_fn)dispatch_addr;
}

int emb_wgpu_dispatch(void *pass, void *pipeline, void *group, uint32_t offset, uint32_t gx, uint32_t gy,
                      uint32_t gz) {
    if (!dispatch_workgroups || !pass || !group)
        return -1;
    if (pipeline)
        set_pipeline(pass, pipeline);
    set_bind_group(pass, 0, group, 1, &offset);
    dispatch_workgroups(pass, gx, gy, gz);
    return 0;
}

int emb_wgpu_encode(void *pass, int64_t n, uintptr_t steps) {
    const uint64_t *s = (const uint64_t *)steps;
    void *last = NULL;
    if (!dispatch_workgroups || !pass)
        return -1;
    for (int64_t i = 0; i < n; i++, s += 6) { /* pipeline, group, offset, gx, gy, gz */
        if (!s[0] || !s[1])
            return -1;
        if ((void *)(uintptr_t)s[0] != last) {
            last = (void *)(uintptr_t)s[0];
            set_pipeline(pass, last);
        }
        uint32_t offset = (uint32_t)s[2];
        set_bind_group(pass, 0, (void *)(uintptr_t)s[1], 1, &offset);
        dispatch_workgroups(pass, (uint32_t)s[3], (uint32_t)s[4], (uint32_t)s[5]);
    }
    return 0;
}
