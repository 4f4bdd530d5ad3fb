// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title SafeTransfer
/// @notice ERC-20 transfer helpers that accept tokens returning either `true` or nothing, and revert with
///         the token address when a transfer fails, so DEX scripts get a readable error.
library SafeTransfer {
    error TokenTransferFailed(address token);

    function safeTransfer(address token, address to, uint256 amount) internal {
        // selector of transfer(address,uint256)
        _call(token, abi.encodeWithSelector(0xa9059cbb, to, amount));
    }

    function safeTransferFrom(address token, address from, address to, uint256 amount) internal {
        // selector of transferFrom(address,address,uint256)
        _call(token, abi.encodeWithSelector(0x23b872dd, from, to, amount));
    }

    function _call(address token, bytes memory data) private {
        (bool success, bytes memory returned) = token.call(data);
        // A token with no code would "succeed" with empty return data; require code to catch wrong addresses.
        if (!success || token.code.length == 0 || (returned.length != 0 && !abi.decode(returned, (bool)))) {
            revert TokenTransferFailed(token);
        }
    }
}
