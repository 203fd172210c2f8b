/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Discovery of a QEMU that runs without libvirt, through its QMP socket
 * (vreclaimd's `--qmp PATH`): its name, UUID, process, base memory, the
 * host socket of the guest agent's virtio-serial port, and whether it has a
 * balloon. What domain-xml.h reads from a libvirt domain's XML, read here
 * from QEMU itself.
 *
 * The probe runs QMP commands through a vr_qemu_monitor; each answer goes
 * to a pure parser taking the reply's "return" member, so tests feed them
 * answers captured from QEMU 7.2. The guest cannot influence these answers,
 * but they are parsed strictly all the same: types checked, strings and
 * lists bounded, and errors name the command and the member.
 *
 * The agent's port is found through QOM: the children of type
 * "child<virtserialport>" of /machine/peripheral (devices with an id) and
 * /machine/peripheral-anon (without), their "name" and "chardev" properties
 * (qom-get: strings; "chardev" is the chardev's id), then that chardev's
 * "filename" in query-chardev. QEMU 7.2 describes a unix socket chardev
 * there as "unix:<path>[,server=on]", prefixed with "disconnected:" while
 * no peer is connected.
 */
#pragma once

#include <glib.h>
#include <json.h>
#include <stdint.h>
#include <sys/types.h>

#include "qmp/qemu-monitor.h"

#define VR_QMP_DOMAIN_ERROR (vr_qmp_domain_error_quark())
GQuark vr_qmp_domain_error_quark(void);

/**
 * enum vr_qmp_domain_error - why a QEMU cannot be taken (failures of the
 * monitor itself are VR_QMP_ERROR / VR_QEMU_MONITOR_ERROR).
 * @VR_QMP_DOMAIN_ERROR_INVALID:    QEMU's answer has the wrong shape or is
 *				    out of bounds; the message names the
 *				    command and the member.
 * @VR_QMP_DOMAIN_ERROR_AGENT_PORT: QEMU has the agent's port but vreclaimd
 *				    cannot use it: two ports with the name,
 *				    its chardev is not in query-chardev, is
 *				    not a unix socket, is one QEMU connects
 *				    to rather than listens on, or has a
 *				    relative path. The message names the
 *				    chardev.
 * @VR_QMP_DOMAIN_ERROR_ARGUMENT:   the caller's socket path or peer pid
 *				    cannot be used (no pid, a basename that
 *				    is no name).
 */
enum vr_qmp_domain_error {
	VR_QMP_DOMAIN_ERROR_INVALID,
	VR_QMP_DOMAIN_ERROR_AGENT_PORT,
	VR_QMP_DOMAIN_ERROR_ARGUMENT,
};

/* The longest guest name taken from QEMU (query-name), bytes. */
#define VR_QMP_DOMAIN_MAX_NAME_BYTES 256

/* The longest QOM child name, property value (port name, chardev id) or
 * chardev label taken from QEMU, bytes: QEMU's ids are short words. */
#define VR_QMP_DOMAIN_MAX_ID_BYTES 256

/* The longest chardev "filename" taken from query-chardev, bytes: a unix
 * socket's is its path (at most 107 bytes) and a few words; others (a
 * file's, a pty's) are paths too. */
#define VR_QMP_DOMAIN_MAX_FILENAME_BYTES 4096

/* The most children of a QOM container, and the most chardevs, taken from
 * QEMU: a guest has tens of devices; more is a broken QEMU. */
#define VR_QMP_DOMAIN_MAX_QOM_CHILDREN 1024
#define VR_QMP_DOMAIN_MAX_CHARDEVS     1024

/* The QOM containers of devices created with -device / device_add. */
#define VR_QMP_DOMAIN_PERIPHERAL      "/machine/peripheral"
#define VR_QMP_DOMAIN_PERIPHERAL_ANON "/machine/peripheral-anon"

/* What qom-list says of a child that is a virtio-serial port. */
#define VR_QMP_DOMAIN_SERIAL_PORT_TYPE "child<virtserialport>"

/* The UUID QEMU reports when started without -uuid. */
#define VR_QMP_DOMAIN_DEFAULT_UUID "00000000-0000-0000-0000-000000000000"

/**
 * struct vr_qmp_domain_info - what vreclaimd learns of a QEMU from its QMP
 * socket.
 * @name:	 the guest's name (query-name; when QEMU has none, or an empty
 *		 one, the socket file's basename): at most
 *		 VR_QMP_DOMAIN_MAX_NAME_BYTES of valid UTF-8 without control
 *		 characters; owned.
 * @uuid:	 its UUID (query-uuid), 36 characters, lower case with dashes;
 *		 QEMU's default all-zero UUID is replaced by
 *		 vr_qmp_domain_uuid_from_path() of the socket, so that two QEMUs
 *		 without -uuid never share one; owned.
 * @pid:	 the QEMU process, from the socket's peer credentials
 *		 (SO_PEERCRED; vr_qmp_get_peer_pid()).
 * @memory_bytes: the guest's base memory (query-memory-size-summary
 *		 "base-memory"), bytes; hot-plugged memory is not counted.
 * @agent_socket_path: the host path of the unix socket QEMU listens on for
 *		 the virtio-serial port named "org.vreclaim.agent.0"
 *		 (VR_DOMAIN_AGENT_CHANNEL of domain-xml.h): absolute, at most
 *		 sizeof(sun_path) - 1 (107) bytes; NULL
 *		 when QEMU has no such port; owned.
 * @has_balloon: QEMU has a balloon device (query-balloon answers rather
 *		 than failing with DeviceNotActive).
 */
struct vr_qmp_domain_info {
	char *name;
	char *uuid;
	pid_t pid;
	uint64_t memory_bytes;
	char *agent_socket_path;
	gboolean has_balloon;
};
typedef struct vr_qmp_domain_info vr_qmp_domain_info;

/**
 * vr_qmp_domain_info_clear() - free what @info owns and zero it (clearing
 * twice is fine).
 */
void vr_qmp_domain_info_clear(struct vr_qmp_domain_info *info);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_qmp_domain_info, vr_qmp_domain_info_clear)

/* --- pure parsers -----------------------------------------------------------
 * Each takes the "return" member of QEMU's reply (borrowed) and fails with
 * VR_QMP_DOMAIN_ERROR_INVALID naming the command and the member, unless said
 * otherwise. */

/**
 * vr_qmp_parse_name() - @ret of query-name: {"name": "..."}, the member
 * absent when QEMU was started without -name.
 * @name:	the name (owned), or NULL when QEMU has none or an empty one.
 * Return: FALSE for a name that is not a string, is longer than
 * VR_QMP_DOMAIN_MAX_NAME_BYTES, is not UTF-8 or holds a control character.
 */
gboolean vr_qmp_parse_name(json_object *ret, char **name, GError **error);

/**
 * vr_qmp_parse_uuid() - @ret of query-uuid: {"UUID": "..."}.
 * @uuid:	the UUID in lower case (owned), or NULL for QEMU's default
 *		VR_QMP_DOMAIN_DEFAULT_UUID.
 * Return: FALSE for a missing UUID or one that is not 8-4-4-4-12
 * hexadecimal digits.
 */
gboolean vr_qmp_parse_uuid(json_object *ret, char **uuid, GError **error);

/**
 * vr_qmp_parse_base_memory() - @ret of query-memory-size-summary:
 * {"base-memory": bytes, "plugged-memory": bytes (optional)}.
 * @bytes:	"base-memory".
 * Return: FALSE for a base-memory that is missing, not an integer, or not
 * positive.
 */
gboolean vr_qmp_parse_base_memory(json_object *ret, uint64_t *bytes, GError **error);

/**
 * vr_qmp_parse_serial_ports() - the virtio-serial ports in @ret of
 * `qom-list {"path": @container}`: an array of {"name": "...", "type":
 * "..."}, of which the children typed VR_QMP_DOMAIN_SERIAL_PORT_TYPE count.
 * @ports:	owned array of the ports' QOM paths ("@container/<name>",
 *		owned), in QEMU's order; may be empty.
 * Return: FALSE for an answer that is not an array, holds more than
 * VR_QMP_DOMAIN_MAX_QOM_CHILDREN entries, an entry that is not an object
 * or lacks a string "name" or "type", or a port whose name is empty,
 * longer than VR_QMP_DOMAIN_MAX_ID_BYTES, or holds '/' or a control
 * character. Messages name the entry ("[3].name").
 */
gboolean vr_qmp_parse_serial_ports(json_object *ret, const char *container, GPtrArray **ports,
				   GError **error);

/**
 * vr_qmp_parse_qom_string() - @ret of `qom-get {"path": @path, "property":
 * @property}` for a string property (a port's "name", its "chardev" id).
 * @value:	the string (owned); "" for a property that is not set (QEMU 7.2
 *		answers "" for a port without a name or without a chardev).
 * Return: FALSE for an answer that is not a string, is longer than
 * VR_QMP_DOMAIN_MAX_ID_BYTES, or holds a NUL or control character; the
 * message names @path and @property.
 */
gboolean vr_qmp_parse_qom_string(json_object *ret, const char *path, const char *property,
				 char **value, GError **error);

/**
 * vr_qmp_parse_chardev_filename() - the socket path in @filename, what
 * query-chardev says of the chardev @label:
 * "[disconnected:]unix:<path>,server=on".
 * @path:	the socket's path (owned).
 * Return: FALSE with VR_QMP_DOMAIN_ERROR_AGENT_PORT naming @label for a
 * chardev that is not a unix socket ("pty:/dev/pts/3", "file", ...), one
 * QEMU connects to (no ",server=on"), or a path that is empty or relative;
 * with VR_QMP_DOMAIN_ERROR_INVALID for a path longer than sizeof(sun_path) - 1
 * (107) bytes or holding a control character.
 */
gboolean vr_qmp_parse_chardev_filename(const char *label, const char *filename, char **path,
				       GError **error);

/**
 * vr_qmp_parse_chardev_socket() - the socket path of the chardev @label in
 * @ret of query-chardev: an array of {"label": "...", "filename": "...",
 * "frontend-open": bool}.
 * @path:	the socket's path (owned; vr_qmp_parse_chardev_filename()).
 * Return: FALSE with VR_QMP_DOMAIN_ERROR_INVALID for an answer that is not
 * an array, holds more than VR_QMP_DOMAIN_MAX_CHARDEVS entries, an entry
 * that is not an object, lacks a string "label" or "filename", has a label
 * longer than VR_QMP_DOMAIN_MAX_ID_BYTES or a filename longer than
 * VR_QMP_DOMAIN_MAX_FILENAME_BYTES, or two entries with @label; with
 * VR_QMP_DOMAIN_ERROR_AGENT_PORT when no entry has @label or its filename
 * is refused.
 */
gboolean vr_qmp_parse_chardev_socket(json_object *ret, const char *label, char **path,
				     GError **error);

/**
 * vr_qmp_domain_uuid_from_path() - the UUID of a QEMU without one, derived
 * from its QMP socket @socket_path: SHA-256 of "vreclaim-qmp:" followed by
 * the path made absolute and canonical (g_canonicalize_filename() against
 * the working directory: "." and ".." and repeated '/' removed, symbolic
 * links kept), its first 16 bytes with the version nibble set to 5 and the
 * RFC 4122 variant bits, in lower case with dashes. Two sockets (two paths)
 * give two UUIDs; one path always gives the same one.
 * Return: owned, 36 characters.
 */
char *vr_qmp_domain_uuid_from_path(const char *socket_path);

/* --- checks of QEMU's answers against what the host knows ------------------
 * QEMU is no more trusted than its guest: under --qmp vreclaimd runs as root
 * and would otherwise size the domain and connect where QEMU says. */

/**
 * vr_qmp_domain_check_memory() - may a QEMU process that maps @vm_size_bytes
 * of virtual memory (VmSize of its /proc/<pid>/status) have a guest of
 * @memory_bytes (query-memory-size-summary)? QEMU maps all of its guest's
 * RAM, so a claim beyond its mapping is a lie or a broken QEMU. Pure.
 * Return: FALSE with VR_QMP_DOMAIN_ERROR_INVALID naming both sizes.
 */
gboolean vr_qmp_domain_check_memory(uint64_t memory_bytes, uint64_t vm_size_bytes, GError **error);

/**
 * vr_qmp_domain_check_agent_socket() - may vreclaimd connect to the agent
 * socket QEMU named in query-chardev? Only to one in the folder of the QMP
 * socket the operator gave with --qmp, or below it, owned by the QEMU
 * process's user: QEMU's own runtime folder, not a path a QEMU could point at
 * another daemon's socket with. Pure.
 * @agent_real:	 the agent socket's path with every symbolic link resolved
 *		 (realpath()).
 * @qmp_dir_real: the QMP socket's folder, likewise resolved.
 * @is_socket:	 lstat() of @agent_real says it is a socket.
 * @owner_uid:	 its owner (lstat()).
 * @qemu_uid:	 the QEMU process's user (the owner of /proc/<pid>).
 * Return: FALSE with VR_QMP_DOMAIN_ERROR_AGENT_PORT saying which rule failed.
 */
gboolean vr_qmp_domain_check_agent_socket(const char *agent_real, const char *qmp_dir_real,
					  gboolean is_socket, uid_t owner_uid, uid_t qemu_uid,
					  GError **error);

/* --- the probe ------------------------------------------------------------ */

/**
 * vr_qmp_domain_probe() - learn what vreclaimd needs of the QEMU behind
 * @mon, a monitor on the QMP socket @socket_path.
 * @peer_pid:	the QEMU process: vr_qemu_monitor_get_peer_pid(@mon) or
 *		vr_qmp_get_peer_pid() of the caller's client.
 * @out:	filled on success (overwritten, not freed: pass it zeroed or
 *		cleared; clear it with vr_qmp_domain_info_clear()); left alone
 *		on failure.
 *
 * Runs, each waiting up to @mon->timeout_ms: query-name, query-uuid,
 * query-memory-size-summary, query-balloon, qom-list of
 * VR_QMP_DOMAIN_PERIPHERAL and VR_QMP_DOMAIN_PERIPHERAL_ANON, qom-get
 * "name" of each virtio-serial port, and for the agent's port qom-get
 * "chardev" and query-chardev.
 * Return: FALSE with @error prefixed "probing the QEMU at <socket_path>: ":
 * VR_QMP_DOMAIN_ERROR_ARGUMENT for a @peer_pid of 0 or less, or (when QEMU
 * has no name) a socket basename that is no name; the parsers' errors; and
 * the monitor's, among them VR_QMP_ERROR_COMMAND when QEMU refused a
 * command (but query-balloon's DeviceNotActive, which means no balloon).
 */
gboolean vr_qmp_domain_probe(struct vr_qemu_monitor *mon, const char *socket_path, pid_t peer_pid,
			     struct vr_qmp_domain_info *out, GError **error);
