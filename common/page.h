/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The page: the unit every layer of vreclaim counts memory in.
 */
#pragma once

/**
 * VR_PAGE_SIZE - a base page, bytes: x86-64's, in the guest and on the host.
 *
 * Region boundaries of the monitor are multiples of it; so are the
 * guest-physical ranges a pageout plan chooses, the host ranges they map to
 * in a QEMU process, the ranges process_madvise() is given, and the pages
 * of /proc/PID/pagemap's entries. One constant for all of them: a page of
 * one layer is a page of the next.
 */
#define VR_PAGE_SIZE 4096ULL
